import type { ReactNode } from "react";

/** Skeleton stands in, pulsing, for a block of `rows` lines while it loads. */
export function Skeleton({ rows = 3 }: { rows?: number }) {
  return (
    <div className="skeleton" aria-busy="true" aria-label="loading" data-testid="loading">
      {Array.from({ length: rows }, (_, i) => (
        <div key={i} className="skeleton-line" />
      ))}
    </div>
  );
}

/** Empty says what is missing and what to do about it. */
export function Empty({ children, testId = "empty" }: { children: ReactNode; testId?: string }) {
  return (
    <p className="empty muted" data-testid={testId}>
      {children}
    </p>
  );
}

/** Failure shows an error with its cause. */
export function Failure({ message }: { message: string }) {
  return (
    <p className="banner bad" role="alert" data-testid="error">
      The hub did not answer: {message}
    </p>
  );
}
