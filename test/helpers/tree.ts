import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A throwaway tree of source files (`files`: path -> text) for a check of the code's shape to run on, removed after:
 * the checks of test/architecture show on it that they find what they look for.
 */
export function inTree<T>(files: Record<string, string>, check: (root: string) => T): T {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tree-'));
  try {
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    }
    return check(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
