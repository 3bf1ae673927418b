"use client";

import { useState, type ReactNode } from "react";
import { QueryClientProvider, type QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import type { AppRouter } from "~/server/api/root";
import { createQueryClient } from "./query-client";
import { BASE_PATH } from "~/env";

/** TRPCProvider / useTRPC: components use `useQuery(trpc.x.y.queryOptions())` and `useSubscription(...)`. */
export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

let browserQueryClient: QueryClient | undefined;
function getQueryClient(): QueryClient {
  if (typeof window === "undefined") return createQueryClient();
  return (browserQueryClient ??= createQueryClient());
}

const url = `${BASE_PATH}/api/trpc`;

/** TRPCReactProvider: `csrf` is the page's CSRF token, sent with every mutation (the hub refuses them without it). */
export function TRPCReactProvider({ children, csrf }: { children: ReactNode; csrf: string }) {
  const queryClient = getQueryClient();
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [
        splitLink({
          condition: (op) => op.type === "subscription",
          true: httpSubscriptionLink({ url }),
          false: httpBatchLink({ url, headers: () => (csrf === "" ? {} : { "x-whohas-csrf": csrf }) }),
        }),
      ],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
