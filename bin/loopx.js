#!/usr/bin/env node
// The installed entry point: runs the built CLI (npm run build writes dist/). The bundle
// (dist/cli/, scripts/bundle-cli.mjs) starts a command in about half the time; it runs when it is
// at least as new as the build it was made from, and the build itself otherwise (after a bare tsc).
import { statSync } from 'node:fs';

const mtime = (rel) => statSync(new URL(rel, import.meta.url), { throwIfNoEntry: false })?.mtimeMs ?? -1;
const entry = mtime('../dist/cli/main.js') >= mtime('../dist/src/cli/main.js') ? '../dist/cli/main.js' : '../dist/src/cli/main.js';
const { main } = await import(entry);

process.exitCode = await main(process.argv.slice(2));
