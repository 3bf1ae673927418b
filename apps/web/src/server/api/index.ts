import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "./root.js";

export { appRouter, type AppRouter } from "./root.js";
export { createCallerFactory } from "./trpc.js";

/** RouterInputs / RouterOutputs give client code the API's types without importing server code. */
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;
