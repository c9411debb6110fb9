// Loaded with `node --import` into each command the scale bench times: at exit, the process's
// peak resident size (getrusage's maxRSS, kB) is written to the file named by
// DARKROOM_BENCH_RSS_FILE. Bench only: darkroom's own code hooks no process event below src/cli.
import { writeFileSync } from 'node:fs';

const file = process.env.DARKROOM_BENCH_RSS_FILE;
if (file) process.on('exit', () => writeFileSync(file, String(process.resourceUsage().maxRSS)));
