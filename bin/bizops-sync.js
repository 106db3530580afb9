#!/usr/bin/env -S node --max-semi-space-size=16
// --max-semi-space-size=16 (MB): Node 24 lets the young generation grow to 64 MB semi-spaces under a
// steady allocation rate (a long backfill, `changes --since 0`), which made peak RSS grow with the
// run's length; 16 keeps it flat at a small cost in collections (docs/operations.md "Memory").
// The `bizops-sync` command. Node 24 runs the TypeScript sources directly (type stripping),
// so there is no build step between a clone and a run.
import '../cli/main.ts';
