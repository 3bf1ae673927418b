import type { NextConfig } from "next";

const config: NextConfig = {
  reactStrictMode: true,
  // Workspace packages ship compiled ESM; Next only needs to resolve them.
  transpilePackages: [],
  typedRoutes: false,
  poweredByHeader: false,
};

export default config;
