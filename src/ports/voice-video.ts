// What a voice conversation asks of the video part when the model calls one of its tools: a video made,
// or a task looked up, as the member who spoke would get it with /video. A turn several members spoke
// runs with the permissions of the most restricted of them. The answer is in words the model can say.

/** A member heard in the turn a call answers, as the video part checks their access. */
export interface VoiceMember {
  userId: string;
  /** Their name on the server, which the model can say; undefined when it could not be looked up. */
  displayName: string | undefined;
  roleIds: readonly string[];
  isServerManager: boolean;
}

/** The member a call runs as (who spoke most of the turn), the others who spoke it, and where the conversation's text channel is. */
export interface VoiceCaller extends VoiceMember {
  guildId: string;
  /** The conversation's text channel: the task's card and video are posted there. */
  channelId: string;
  /**
   * The other members named for the turn: the call is made for the caller (their task, limits and
   * budget), and only when each of these may make it too.
   */
  alsoHeard: readonly VoiceMember[];
}

export interface VoiceVideoRequest {
  prompt: string;
  duration: number | undefined;
  aspectRatio: string | undefined;
  resolution: string | undefined;
  /** Variants to make side by side (1-4), one job and one card; unset: the server's default. */
  variants?: number | undefined;
}

/**
 * What came of a request: `submitted` (with the task's short ref), `queued` (stored and waiting in its
 * key's line, nothing sent yet: `place` is where it stands, 1 is next, when known), `refused` (why, in
 * /video's words for the member), `failed` (it could not be done), `found` / `not_found` for a status.
 */
export interface VoiceToolOutcome {
  status: 'submitted' | 'queued' | 'refused' | 'failed' | 'found' | 'not_found';
  message: string;
  task?: string;
  place?: number;
}

export interface VoiceVideoRequests {
  generate(caller: VoiceCaller, request: VoiceVideoRequest): Promise<VoiceToolOutcome>;
  /** The caller's latest task on the server, or the one `taskRef` names. */
  status(caller: VoiceCaller, taskRef: string | undefined): Promise<VoiceToolOutcome>;
}
