#!/usr/bin/env node
// whohas-hub: the production entry of the hub (the bundled custom server). Run `pnpm build` first.
// Next.js reads NODE_ENV when it loads; the hub is production unless told otherwise.
process.env.NODE_ENV ??= "production";
await import("../dist/server.js");
