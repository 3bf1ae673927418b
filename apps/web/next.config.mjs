// @ts-check
// Plain JavaScript, so that the production hub loads it without a compiler (the images carry no SWC binary).

/**
 * nextConfig is the dashboard's Next.js configuration for a path prefix. WHOHAS_BASE_PATH (build time) serves the
 * dashboard under a prefix, for an ingress that forwards /whohas/... unchanged: `WHOHAS_BASE_PATH=/whohas pnpm build`.
 * The custom server reads the prefix back from the build output and passes the same configuration to Next, so the
 * running hub's environment cannot disagree with the build.
 * @param {string} prefix
 * @returns {import("next").NextConfig}
 */
export function nextConfig(prefix) {
  const basePath = prefix.replace(/\/+$/, "");
  if (basePath !== "" && !/^\/[\w.~-]+(\/[\w.~-]+)*$/.test(basePath))
    throw new Error(`WHOHAS_BASE_PATH: "${basePath}" must look like /whohas`);
  return {
    reactStrictMode: true,
    // Workspace packages ship compiled ESM; Next only needs to resolve them.
    transpilePackages: [],
    typedRoutes: false,
    poweredByHeader: false,
    basePath,
    // The browser's API calls need the prefix too (links and assets get it from basePath).
    env: { NEXT_PUBLIC_WHOHAS_BASE_PATH: basePath },
    // The stylesheet is small (a few KB): inlined, the first paint does not wait for a second request.
    experimental: { inlineCss: true },
  };
}

export default nextConfig(process.env.WHOHAS_BASE_PATH ?? "");
