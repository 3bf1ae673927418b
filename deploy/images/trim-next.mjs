// Trims the next package in the hub's `pnpm deploy` output to the files the running hub can reach, which is what
// Next's `output: "standalone"` does for its own server (the hub has a custom one, so standalone does not fit as is):
// the files listed by the traces `next build` writes (.next/**/*.nft.json, one per server entry, Next's server
// included), and those reached from the custom server (bin/whohas-hub.js, dist/server.js), traced with the copy of
// @vercel/nft that Next ships. Everything else under next/ (other runtimes' bundles, compilers, types) is removed.
//
//   node deploy/images/trim-next.mjs DEPLOY_OUTPUT_DIR
import { readFileSync, readdirSync, realpathSync, rmSync, rmdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";

const out = resolve(process.argv[2] ?? "");
if (process.argv.length !== 3) {
  console.error("usage: trim-next.mjs DEPLOY_OUTPUT_DIR");
  process.exit(2);
}
const nextDir = realpathSync(join(out, "node_modules/next"));
const MARK = "/node_modules/next/";

/** nextPath is a traced path's place inside the next package ("dist/server/next.js"), or undefined outside it. */
const nextPath = (p) => {
  const at = p.lastIndexOf(MARK);
  return at < 0 ? undefined : p.slice(at + MARK.length);
};

const keep = new Set(["package.json"]);
const add = (p) => {
  const inNext = nextPath(p);
  if (inNext !== undefined) keep.add(inNext);
};

const walk = (dir, visit) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, visit);
    else visit(p);
  }
};

// The traces were written in the workspace; their paths keep the pnpm layout that `pnpm deploy` reproduces.
let traces = 0;
walk(join(out, ".next"), (p) => {
  if (!p.endsWith(".nft.json")) return;
  traces++;
  for (const f of JSON.parse(readFileSync(p, "utf8")).files) add(`/${f}`);
});
if (traces === 0) throw new Error(`trim-next: no .nft.json under ${out}/.next: was it built by next build?`);

const require = createRequire(join(nextDir, "package.json"));
const { nodeFileTrace } = require("next/dist/compiled/@vercel/nft");
// Next picks its runtime bundle by mode at run time, so the tracer sees every variant: the hub runs in production,
// never with a development runtime, and loads no source maps (Next's own trace of its server lists neither).
const ignore = (p) => p.endsWith(".map") || p.endsWith(".runtime.dev.js");
const { fileList } = await nodeFileTrace([join(out, "bin/whohas-hub.js"), join(out, "dist/server.js")], { base: out, ignore });
for (const f of fileList) add(`/${f}`);

// Loading next.config (which the custom server does, Next's standalone server does not) resolves require aliases
// that name their targets in strings (server/config-utils.js, loadWebpackHook), which no tracer follows.
const hook = readFileSync(join(nextDir, "dist/server/config-utils.js"), "utf8");
for (const [, target] of hook.matchAll(/'(next\/dist\/compiled\/[^']+)'/g)) {
  try {
    add(require.resolve(target));
  } catch {
    // An alias whose target this Next does not ship: it would not resolve untrimmed either.
  }
}

let removed = 0;
const before = keep.size;
walk(nextDir, (p) => {
  if (keep.has(relative(nextDir, p))) return;
  rmSync(p);
  removed++;
});
// Directories left empty go too.
const prune = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) prune(join(dir, e.name));
  if (dir !== nextDir && readdirSync(dir).length === 0) rmdirSync(dir);
};
prune(nextDir);
console.log(`trim-next: kept ${before} files of next (${traces} traces), removed ${removed} (${relative(out, dirname(nextDir))})`);
