import type { EventEmitter } from 'node:events';
import type { Gateway } from '../gateway/gateway.ts';
import type { Interactions } from '../rest/interactions.ts';
import type { MessageStore } from '../rest/messages.ts';
import type { Guild, StandInState } from '../world/state.ts';

/** What the facade's roles (world, actions, faults, observation) share: the stand-in's running pieces. */
export interface StandInParts {
  readonly state: StandInState;
  /** Everything that happens, for waits: 'message', 'callback', 'request', 'identify' and so on. */
  readonly events: EventEmitter;
  readonly gateway: Gateway;
  readonly interactions: Interactions;
  readonly messages: MessageStore;
}

export function guildOf(parts: StandInParts, guildId: string): Guild {
  const guild = parts.state.guilds.get(guildId);
  if (!guild) throw new Error(`no guild ${guildId} in the stand-in`);
  return guild;
}
