/**
 * The `streams` test project's setup (vitest.config.ts): registers the throwaway streams of
 * test/streams/throwaway-streams.ts, bizops-sync's definitions and the simulator's declarations,
 * before the test file imports anything that derives from the registries when it loads (the
 * configuration schema, the event schemas, the simulator's routes and tokens). The tests that cover
 * every stream then cover them too, unedited.
 */
import { registerSimulatedStream } from '../../packages/simulator/src/streams/index.ts';
import { registerStream } from '../../src/streams/definitions.ts';
import { gadgetsList, gadgetsStream, locationsList, locationsStream } from './throwaway-streams.ts';

registerStream(locationsStream);
registerStream(gadgetsStream);
registerSimulatedStream(locationsList);
registerSimulatedStream(gadgetsList);
