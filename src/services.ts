import type { BotConfig } from './config.ts';
import type { CommandMentions } from './discord/command-mentions.ts';
import type { ModelCatalog } from './gateway/model-catalog.ts';
import type { Logger } from './lib/log.ts';
import type { SettingsService } from './settings/service.ts';
import type { Store } from './store/index.ts';
import type { Video } from './video/index.ts';
import type { VoiceService } from './voice/service.ts';

/** What command handlers may call. Handlers stay thin: the work happens in these parts. */
export interface Services {
  config: BotConfig;
  log: Logger;
  store: Store;
  settings: SettingsService;
  /** The models each server's key may use (autocomplete, checking a default). */
  models: ModelCatalog;
  video: Video;
  voice: VoiceService;
  /** Names a command as a clickable mention (`</voice ignore-me:…>`), else as text. */
  mentions: Pick<CommandMentions, 'mention'>;
}
