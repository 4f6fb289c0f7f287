#!/usr/bin/env node
// The installed entry point: runs the built CLI (npm run build writes dist/).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
