// Requests are written in the gateway's wire format (snake_case), so the native layer can forward them
// unchanged and validation errors name fields exactly as the gateway would. Enumerated values are typed
// as plain strings on purpose: commands pass user input through and validateGeneration() checks it.

import type { Layer } from './spec.ts';
import type { TaskError } from './errors.ts';

/** What a call to the gateway is made with: a key, the layer it talks to, and the key's fingerprint. */
export interface GatewayCredentials {
  apiKey: string;
  layer: Layer;
  /** A stable, non-secret fingerprint of the key (`keyFingerprint`), to tell keys apart in records and caches. */
  keyId: string;
}

/** Exactly one of `url` (public URL or base64 data URI) and `file_id`. */
export interface ImageInput {
  url?: string;
  file_id?: string;
}

/** Exactly one of `voice_id` (a built-in voice, any case) and `url` (live human-voice audio, <= 15 s). */
export interface ReferenceAudio {
  voice_id?: string;
  url?: string;
}

export interface StorageOptions {
  filename: string;
  /** Seconds, at most 2592000 (30 days); no expiry when omitted. */
  expires_after?: number;
  public_url?: boolean;
}

export interface OutputOptions {
  /** A signed HTTP PUT address the provider uploads the finished video to. */
  upload_url: string;
}

export interface GenerationRequest {
  model: string;
  prompt?: string;
  duration?: number;
  resolution?: string;
  aspect_ratio?: string;
  image?: ImageInput;
  last_frame?: ImageInput;
  reference_images?: ImageInput[];
  reference_audios?: ReferenceAudio[];
  storage_options?: StorageOptions;
  output?: OutputOptions;
  user?: string;
  /** Compatibility layer alias of `duration` (forwarded unchanged on the native layer). */
  seconds?: number;
  /** Compatibility layer alias of `resolution` (forwarded unchanged on the native layer). */
  size?: string;
}

/** The source of an edit or extension: an `.mp4` link carrying the suffix, or a stored file. */
export interface VideoSource {
  url?: string;
  file_id?: string;
}

export interface EditRequest {
  model: string;
  prompt: string;
  video: VideoSource;
  output?: OutputOptions;
  user?: string;
}

export interface ExtensionRequest {
  model: string;
  prompt: string;
  video: VideoSource;
  /** The added length, 2-10 s (default 6). */
  duration?: number;
  /** Compatibility layer alias of `duration`. */
  seconds?: number;
  output?: OutputOptions;
  user?: string;
}

/** Both layers' status values folded into one: queued/processing/pending are all `running`. */
export type TaskStatus = 'running' | 'succeeded' | 'failed' | 'expired';

export interface SubmittedTask {
  /** The task id of its layer (`task_id` or native `request_id`); only that layer can query it. */
  id: string;
  layer: Layer;
  status: 'running';
  /** The raw status when the layer reports one (compatibility: `queued` or `processing`). */
  rawStatus: string | undefined;
  /** The answer's request id (`x-request-id` or `request-id`), for support. */
  requestId: string | undefined;
}

export interface StoredFile {
  fileId: string;
  filename: string | undefined;
  /** Only when the request set `expires_after`. */
  expiresAt: Date | undefined;
  /** Only when requested and enabled, and only an http(s) address. */
  publicUrl: string | undefined;
  /** A `public_url` that is not an http(s) address (`javascript:…`), as the gateway wrote it: never to be shared. */
  refusedPublicUrl?: string;
}

export interface TaskResult {
  id: string;
  layer: Layer;
  status: TaskStatus;
  rawStatus: string | undefined;
  /** 0-100, when the gateway reports it. */
  progress: number | undefined;
  /** A usable, non-empty video address; undefined while running, when failed, or when moderated. */
  videoUrl: string | undefined;
  /** A succeeded task's video address that is not an http(s) link (`javascript:…`), as the gateway wrote it: never fetched or shared. */
  refusedVideoUrl?: string;
  /**
   * The video was removed by content moderation (`respect_moderation: false` with an empty url, or a
   * moderation error code). Tell the user; there is nothing to post.
   */
  moderated: boolean;
  durationSeconds: number | undefined;
  model: string | undefined;
  file: StoredFile | undefined;
  /** Storage failed; the task still succeeded and `videoUrl` stays usable. */
  storageError: string | undefined;
  /** From `usage.cost_in_usd_ticks` when present (1 USD = 10^10 ticks). */
  costUsdTicks: number | undefined;
  costUsd: number | undefined;
  error: TaskError | undefined;
  requestId: string | undefined;
}

export interface GatewayModel {
  id: string;
  ownedBy: string | undefined;
}

export interface ClientSecret {
  value: string;
  /** When the gateway says (docs/gateway.md, "Client secrets": `expires_at`); the spec does not show the answer. */
  expiresAt: Date | undefined;
}

export interface DownloadedVideo {
  bytes: Buffer;
  contentType: string | undefined;
}

/** A video written to a file by `saveVideo`, checked to start like one. */
export interface SavedVideo {
  size: number;
  contentType: string | undefined;
  container: 'mp4' | 'webm';
}
