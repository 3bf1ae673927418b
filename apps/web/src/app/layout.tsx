import type { Metadata } from "next";
import type { ReactNode } from "react";
import { TRPCReactProvider } from "~/trpc/react";
import "./globals.css";

export const metadata: Metadata = {
  title: "whohas: who answers ARP for your LoadBalancer IPs",
  description: "Live view of which nodes answer ARP for each MetalLB layer 2 LoadBalancer IP.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <header className="top">
          <strong>whohas</strong>
          <span className="muted">who answers ARP for each LoadBalancer IP</span>
        </header>
        <TRPCReactProvider>{children}</TRPCReactProvider>
      </body>
    </html>
  );
}
