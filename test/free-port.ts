/**
 * Ports for the servers tests run of their own (brokers, Redis, PostgreSQL): free now, and outside
 * the kernel's ephemeral range, so no other process can be handed one by chance. A port the kernel
 * picks (`listen(0)`) is in that range; while a test's own server boots or lies killed between two
 * starts, every other test's `listen(0)` and outgoing connection could take the same port, and the
 * test would then talk to a stranger or to nobody.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port handed out by the kernel (Linux's `ip_local_port_range`; 32768 where it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 2048 ? low : 32768;
  } catch {
    return 32768;
  }
}

/** True when a listener can bind `port` on 127.0.0.1 now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on now, drawn at random below the ephemeral range
 * (from 1024 up, at least 10,000 ports), so only another test drawing the same number could take it.
 * @throws Error when 100 draws found every port taken
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = Math.max(1024, high - 20_000);
  for (let draw = 0; draw < 100; draw += 1) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${low} and ${high} after 100 draws`);
}
