/**
 * `npm start`: everything a fresh clone needs, then the API and one worker as child processes.
 * Generate the Prisma client, migrate once (each process would too, under an advisory lock, but one line of output is
 * nicer), then run both, forwarding SIGINT/SIGTERM so each can shut down gracefully. If either dies, stop the other.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '..');
const tsx = require.resolve('tsx/cli');
const run = (script: string) => spawnSync(process.execPath, [tsx, path.join(root, script)], { cwd: root, stdio: 'inherit' });

for (const step of ['scripts/generate.ts', 'scripts/migrate.ts']) {
  const result = run(step);
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const children: ChildProcess[] = ['apps/api/src/server.ts', 'apps/worker/src/main.ts'].map((entry) =>
  spawn(process.execPath, [tsx, path.join(root, entry)], { cwd: root, stdio: 'inherit' }),
);

let exiting = false;
const stopAll = (signal: NodeJS.Signals) => {
  for (const child of children) if (child.exitCode === null) child.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    exiting = true;
    stopAll(signal);
  });
}
for (const child of children) {
  child.on('exit', (code) => {
    if (!exiting) {
      exiting = true;
      process.exitCode = code ?? 1;
      stopAll('SIGTERM');
    }
    if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(process.exitCode ?? 0);
  });
}
