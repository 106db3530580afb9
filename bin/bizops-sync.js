#!/usr/bin/env node
// The `bizops-sync` command. Node 24 runs the TypeScript sources directly (type stripping),
// so there is no build step between a clone and a run.
import '../cli/main.ts';
