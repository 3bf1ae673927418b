import type { Metadata } from "next";
import type { ReactNode } from "react";
import { Nav } from "~/components/nav";
import { TRPCReactProvider } from "~/trpc/react";
import "./globals.css";

export const metadata: Metadata = {
  title: "whohas: who answers ARP for your LoadBalancer IPs",
  description: "Live view of which nodes answer ARP for each MetalLB layer 2 LoadBalancer IP.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en" suppressHydrationWarning>
      <body>
        <Nav />
        <TRPCReactProvider>{children}</TRPCReactProvider>
      </body>
    </html>
  );
}
