// What a server chose for /video when a member leaves an option out: the server settings keep it, the
// video part applies it.

export interface StorageDefaults {
  /** Keep the video in the gateway's storage this many days; 0 keeps nothing beyond the temporary link. */
  keepDays: number;
  publicLink: boolean;
}

/**
 * Who may press the buttons under a posted video (Extend, Edit, Regenerate): any member (the default), or
 * only the member who made it. The new task is the presser's either way.
 */
export type ResultButtons = 'anyone' | 'owner';

/**
 * Whether the member hears when their video is ready (or could not be made): one short new message that
 * mentions them, replying to the card (`/config defaults ping`); the default is on.
 */
export type ReadyPing = 'on' | 'off';

/** The most variants one job makes (`/video generate variants`, `/config defaults variants`): each is a video of its own. */
export const MAX_VARIANTS = 4;

export interface VideoDefaults {
  model: string | undefined;
  resolution: string | undefined;
  duration: number | undefined;
  aspectRatio: string | undefined;
  storage: StorageDefaults;
  /** Unset: anyone. */
  buttons?: ResultButtons;
  /** How many variants a generation makes when its member does not say (`/config defaults variants`); unset: one. */
  variants?: number;
  /** Unset: on. */
  ping?: ReadyPing;
  /** A video estimated over this many ticks waits for its member's confirmation; 0: none does. */
  confirmOverUsdTicks?: number;
}
