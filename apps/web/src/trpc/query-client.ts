import { QueryClient } from "@tanstack/react-query";

/** createQueryClient: data arrives by subscription, so queries do not refetch on their own. */
export function createQueryClient(): QueryClient {
  return new QueryClient({ defaultOptions: { queries: { staleTime: 30_000, refetchOnWindowFocus: false } } });
}
