import path from 'node:path';
import ts from 'typescript';

/**
 * The typed client types the request bodies: test/types/client-misuse.ts holds deliberate misuses, each marked
 * `@ts-expect-error`, and compiles clean only while every one of them is refused (an unused `@ts-expect-error` is an
 * error). `npm run typecheck` checks the same file.
 */
it('every deliberate misuse of the typed client fails to compile, and the right uses compile', () => {
  const root = path.resolve(__dirname, '../..');
  const config = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const program = ts.createProgram([path.join(root, 'test/types/client-misuse.ts')], { ...options, noEmit: true });
  const problems = ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${path.relative(root, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '';
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
  expect(problems).toEqual([]);
}, 120_000);
