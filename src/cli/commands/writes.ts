/** `bizops-sync enqueue` and `bizops-sync worker`: registered by the write-queue work (issue 4). */
import type { Command } from 'commander';

export function registerWriteCommands(_program: Command): void {}
