import type { Result } from '../src/lib/result.ts';
import type { VoiceBudgetLeft, VoiceSpending, VoiceUse } from '../src/ports/voice-spend.ts';
import type { VoiceSession } from '../src/voice/session.ts';

// Issue 24's voice metering in the capacity benchmark (bench/voice-capacity.ts): "50 metered
// conversations add nothing measurable to the voice CPU figure". A metered conversation is the same
// conversation with the voice part's meter running beside its session, counting against a spending that
// only counts what it is asked (no store: the store's cost is the spend benchmark's, bench/spend.ts) and
// never bounds a conversation.

/** A spending that answers at once: every conversation may start and no budget bounds it. */
export class CountingVoiceSpending implements VoiceSpending {
  starts = 0;
  meters = 0;
  meteredMs = 0;

  checkStart(): Promise<Result> {
    this.starts++;
    return Promise.resolve({ ok: true });
  }

  meter(use: VoiceUse): Promise<VoiceBudgetLeft> {
    this.meters++;
    this.meteredMs += use.ms;
    return Promise.resolve({ msLeft: undefined, reason: '' });
  }
}

/** A conversation's meter, started once its session is, and stopped when it leaves. */
export interface RunningMeter {
  stop(): void;
}

export interface MeteredConversation {
  guildId: string;
  /** Who brought the bot in, whom the time is counted against. */
  userId: string;
  session: VoiceSession;
}

/**
 * Starts the voice part's meter on a conversation, counting against `spending`; undefined while the voice
 * part has no meter to start (the metered comparison is then skipped and says so).
 *
 * To wire: once src/voice/meter.ts is in, return a function that starts it on the conversation's session
 * exactly as src/voice/service.ts does for /voice join (the same spending port, the realtime model of
 * the bench's sessions, 'svc-voice-latest'), and hands back its stop.
 */
export function voiceMeterStarter(spending: VoiceSpending): ((conversation: MeteredConversation) => RunningMeter) | undefined {
  void spending;
  return undefined;
}
