/**
 * `npm start`: everything a fresh clone needs, then the API and one worker as child processes (and the SMTP submission
 * server when SMTP_PORT or SMTPS_PORT is set, the MX when MX_PORT is set).
 * Build (scripts/build.ts: the Prisma client, then dist/ compiled afresh; plain node uses about 50 MB less per process
 * than running the sources through tsx), migrate once (each process would too, under an advisory lock, but one line of output is nicer), then
 * run both, forwarding SIGINT/SIGTERM so each can shut down gracefully. If either dies, stop the other.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { API_NODE_FLAGS, SMTP_NODE_FLAGS, WORKER_NODE_FLAGS } from './node-options';

const root = path.resolve(__dirname, '..');
const tsx = require.resolve('tsx/cli');
const steps = [
  [tsx, path.join(root, 'scripts/build.ts')],
  [path.join(root, 'dist/scripts/migrate.js')],
];
for (const args of steps) {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const children: ChildProcess[] = [
  [...API_NODE_FLAGS, path.join(root, 'dist/apps/api/src/server.js')],
  [...WORKER_NODE_FLAGS, path.join(root, 'dist/apps/worker/src/main.js')],
  // SMTP submission (docs/smtp.md) runs beside them when a port is set, with its own V8 flag (scripts/node-options.ts)
  ...(process.env.SMTP_PORT || process.env.SMTPS_PORT ? [[...SMTP_NODE_FLAGS, path.join(root, 'dist/apps/smtp/src/main.js')]] : []),
  // the MX (docs/mx.md) when MX_PORT is set, with the API's V8 flag: it too holds messages while it checks them
  ...(process.env.MX_PORT ? [[...API_NODE_FLAGS, path.join(root, 'dist/apps/mx/src/main.js')]] : []),
].map((args) => spawn(process.execPath, args, { cwd: root, stdio: 'inherit' }));

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
