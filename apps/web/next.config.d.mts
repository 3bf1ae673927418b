// Types of next.config.mjs, which stays plain JavaScript (the production hub loads it without a compiler).
import type { NextConfig } from "next";

export function nextConfig(prefix: string): NextConfig;
declare const config: NextConfig;
export default config;
