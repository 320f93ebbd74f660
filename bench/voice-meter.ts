import type { Outcome } from '../src/wording/notice.ts';
import type { VoiceBudgetLeft, VoiceSpending, VoiceUse } from '../src/ports/voice-spend.ts';
import { silentLogger } from '../src/lib/log.ts';
import { ConversationMeter, type MeteredSession } from '../src/voice/meter.ts';

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

  checkStart(): Promise<Outcome> {
    this.starts++;
    return Promise.resolve({ ok: true });
  }

  meter(use: VoiceUse): Promise<VoiceBudgetLeft> {
    this.meters++;
    this.meteredMs += use.ms;
    return Promise.resolve({ msLeft: undefined });
  }
}

/** A conversation's meter: told of each realtime session it opens, started once the first is up, stopped when it leaves. */
export interface RunningMeter {
  opened(session: MeteredSession): void;
  start(): void;
  stop(): void;
}

export interface MeteredConversation {
  guildId: string;
  /** Who brought the bot in, whom the time is counted against. */
  userId: string;
}

/** The heartbeat of src/voice/service.ts's meters. */
const HEARTBEAT_MS = 30_000;

/**
 * Starts the voice part's meter (src/voice/meter.ts) on a conversation, counting against `spending`,
 * as src/voice/service.ts does for /voice join: the bench's realtime model, the service's heartbeat.
 */
export function voiceMeterStarter(spending: VoiceSpending): (conversation: MeteredConversation) => RunningMeter {
  return ({ guildId, userId }) => {
    const meter = new ConversationMeter({
      spending,
      guildId,
      userId,
      model: 'svc-voice-latest',
      heartbeatMs: HEARTBEAT_MS,
      log: silentLogger,
      onWarning: () => {},
      onSpent: () => {},
    });
    return {
      opened: (session) => meter.opened(session),
      start: () => void meter.start(),
      stop: () => void meter.end(),
    };
  };
}
