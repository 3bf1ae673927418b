import { describe, expect, it } from "vitest";
import { ANSWER_WINDOW_MS } from "../judge/findings.js";
import { AnswerNews, MAX_NEWS_MACS } from "./answer-news.js";

const IP = 0xc000020a;
const A = 0x02005e00000a;
const B = 0x02005e00000b;

describe("AnswerNews", () => {
  it("calls a MAC's first answer for an IP news, and its answers while it keeps answering not", () => {
    const news = new AnswerNews();
    expect(news.seen(IP, A, 1000)).toBe(true);
    for (let t = 1100; t < 20_000; t += 100) expect(news.seen(IP, A, t)).toBe(false);
  });

  it("calls a second MAC news for the same IP, and an IPv6 address apart from an IPv4 one", () => {
    const news = new AnswerNews();
    news.seen(IP, A, 1000);
    expect(news.seen(IP, B, 1050)).toBe(true);
    expect(news.seen("2001:db8::a", A, 1060)).toBe(true);
    expect(news.seen(IP + 1, A, 1070)).toBe(true);
  });

  it("calls a MAC back after ANSWER_WINDOW_MS of silence news again, and not one just inside it", () => {
    const news = new AnswerNews();
    news.seen(IP, A, 1000);
    expect(news.seen(IP, A, 1000 + ANSWER_WINDOW_MS)).toBe(false);
    expect(news.seen(IP, A, 1000 + 2 * ANSWER_WINDOW_MS + 1)).toBe(true);
  });

  it("keeps at most MAX_NEWS_MACS MACs an IP: a flood of made-up MACs is news each time and grows nothing", () => {
    const news = new AnswerNews();
    for (let k = 0; k < MAX_NEWS_MACS; k++) news.seen(IP, A + k, 1000);
    expect(news.seen(IP, A, 1100)).toBe(false);
    for (let k = 0; k < 10_000; k++) expect(news.seen(IP, B + 1000 + k, 1100)).toBe(true);
    // Those remembered stay remembered; the flood was not.
    expect(news.seen(IP, A + MAX_NEWS_MACS - 1, 1200)).toBe(false);
    expect(news.seen(IP, B + 1000, 1200)).toBe(true);
    expect(news.size).toBe(MAX_NEWS_MACS);
  });

  it("is not fooled by frames out of order: an older frame neither is news nor moves the time back", () => {
    const news = new AnswerNews();
    news.seen(IP, A, 10_000);
    expect(news.seen(IP, A, 9_000)).toBe(false);
    expect(news.seen(IP, A, 10_000 + ANSWER_WINDOW_MS)).toBe(false);
  });
});
