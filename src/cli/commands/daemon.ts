/** `bizops-sync daemon` and its companions (webhooks, config check): registered by the daemon work (issue 3). */
import type { Command } from 'commander';

export function registerDaemonCommands(_program: Command): void {}
