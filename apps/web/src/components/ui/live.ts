"use client";

/**
 * useLive combines a query's answer (shown at once) with what its subscription pushes afterwards (tracked events:
 * `{ id, data }`): the freshest value, whether the first load is still running, and the error to show, if any.
 * Use: `useLive(useQuery(trpc.x.list.queryOptions()), useSubscription(trpc.x.live.subscriptionOptions()))`.
 */
export function useLive<T>(
  first: { data: T | undefined; error: { message: string } | null; isLoading: boolean },
  sub: { data: { id: string; data: T } | undefined; status: string },
): { data: T | undefined; loading: boolean; error: string | null } {
  const data = sub.data?.data ?? first.data;
  const error = first.error?.message ?? (sub.status === "error" ? "the live connection to the hub failed; retrying" : null);
  return { data, loading: data === undefined && first.isLoading, error: data === undefined ? error : null };
}
