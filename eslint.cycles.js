// @ts-check
/**
 * `darkroom/no-import-cycle`: no circle of imports among the files of src/, type-only imports
 * and re-exports included (docs/ARCHITECTURE.md § Import rules). import-x/no-cycle skips
 * `import type`, and a circle of types is still a circle to a reader: the low module that
 * reaches up for a type is the habit this rule stops.
 *
 * The graph of src/ is read once per lint run (TypeScript's own pre-parser and module
 * resolution); each import that closes a circle is reported with the circle it closes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(import.meta.dirname, 'src');
const OPTIONS = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext };

/** @type {Map<string, Map<string, string>> | undefined} file → (specifier → file it names) */
let graph;
/** @type {Map<string, number> | undefined} file → its circle's index (files in no circle are absent) */
let circleOf;
/** @type {string[][]} */
let circles = [];

function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function build() {
  graph = new Map();
  for (const file of sourceFiles(SRC)) {
    const deps = new Map();
    for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const r = ts.resolveModuleName(fileName, file, OPTIONS, ts.sys).resolvedModule;
      if (r && r.resolvedFileName.startsWith(SRC + path.sep) && !r.isExternalLibraryImport) deps.set(fileName, r.resolvedFileName);
    }
    graph.set(file, deps);
  }
  // Tarjan's strongly connected components: each of more than one file is a circle.
  circleOf = new Map();
  circles = [];
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v)?.values() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const members = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      members.push(w);
    } while (w !== v);
    if (members.length > 1) {
      for (const m of members) circleOf.set(m, circles.length);
      circles.push(members);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
}

/** A shortest path of imports from `from` back to `to`, inside one circle. */
function pathBack(from, to) {
  const prev = new Map([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const v = queue.shift();
    if (v === to) break;
    for (const w of graph?.get(v)?.values() ?? []) {
      if (prev.has(w) || circleOf?.get(w) !== circleOf?.get(from)) continue;
      prev.set(w, v);
      queue.push(w);
    }
  }
  const out = [to];
  for (let v = to; v !== from; v = prev.get(v)) out.unshift(prev.get(v));
  return out;
}

/** @type {import('eslint').Rule.RuleModule} */
export const noImportCycle = {
  meta: { type: 'problem', schema: [], messages: { circle: 'import circle: {{circle}} (docs/ARCHITECTURE.md § Import rules)' } },
  create(context) {
    const file = context.filename;
    if (!file.startsWith(SRC + path.sep)) return {};
    if (!graph) build();
    const mine = circleOf?.get(file);
    if (mine === undefined) return {};
    const check = (node) => {
      const target = graph?.get(file)?.get(node.source.value);
      if (target === undefined || circleOf?.get(target) !== mine) return;
      const circle = [file, ...pathBack(target, file)].map((f) => path.relative(SRC, f)).join(' → ');
      context.report({ node: node.source, messageId: 'circle', data: { circle } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: (node) => node.source && check(node),
      ExportAllDeclaration: check,
      ImportExpression: (node) => node.source.type === 'Literal' && check(node),
    };
  },
};
