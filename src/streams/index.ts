/**
 * The streams (docs/sync.md): what a stream is (`defineStream`) and the registry of the streams
 * this build syncs. The face of src/streams/ for jobs/ and cli/.
 */
export { column, defineStream, listRequest, type ColumnDefinition, type ColumnType, type StreamDefinition } from './define-stream.ts';
export { isStreamName, STREAM_LIST, STREAM_NAMES, streamByName, STREAMS, type RegisteredStream, type StreamName } from './definitions.ts';
