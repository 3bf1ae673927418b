// What one MAC did for one IP, as the judge's memory of the IP keeps it: its replies, its streak, its delays, its
// announcements grouped into episodes.

/** An Announcement episode: gratuitous frames of one MAC with gaps under EPISODE_GAP_MS. */
export interface Episode {
  first: number;
  last: number;
}

/** EPISODE_GAP_MS: announcements further apart than this start a new episode (MetalLB repeats every 1.1 s). */
const EPISODE_GAP_MS = 3000;
/** MAX_EPISODES bounds the announcement episodes kept per MAC. */
const MAX_EPISODES = 8;

/** MacState is what one MAC did for one IP, from the joined requests and the announcements. */
export interface MacState {
  readonly mac: string;
  /** Latest reply to a joined request (0: none). */
  lastReply: number;
  /** Since when it has answered without missing a request it would have seen (0: not answering). */
  streakStart: number;
  /** Latest final request whose capture points would have seen its reply, and that it did not answer. */
  lastMissed: number;
  /** Replies with a delay, and their sum: who tends to answer first. */
  delayCount: number;
  delaySum: number;
  /** Made at its first announcement (most MACs never announce). */
  episodes: Episode[] | null;
  /** The kind and THA of its latest announcement (Linux takes a gratuitous reply only with THA = SHA). */
  lastAnnounceKind: string | null;
  lastAnnounceTha: string | null;
  /** Since when it has answered every probe of whohas's own within PROBE_ANSWER_MS of the previous (0: never), and the latest. */
  probedSince: number;
  lastProbeReply: number;
}

export const newMac = (mac: string): MacState => ({
  mac,
  lastReply: 0,
  streakStart: 0,
  lastMissed: 0,
  delayCount: 0,
  delaySum: 0,
  episodes: null,
  lastAnnounceKind: null,
  lastAnnounceTha: null,
  probedSince: 0,
  lastProbeReply: 0,
});

/** noteAnnouncement adds gratuitous frames of `m` seen from `first` to `last` to its episodes (merged when close). */
export function noteAnnouncement(m: MacState, first: number, last: number): void {
  const episodes = (m.episodes ??= []);
  const latest = episodes[episodes.length - 1];
  if (latest !== undefined && first - latest.last <= EPISODE_GAP_MS && last >= latest.first - EPISODE_GAP_MS) {
    latest.first = Math.min(latest.first, first);
    latest.last = Math.max(latest.last, last);
    return;
  }
  episodes.push({ first, last });
  episodes.sort((a, b) => a.first - b.first);
  if (episodes.length > MAX_EPISODES) episodes.shift();
}
