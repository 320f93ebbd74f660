import type { BotConfig } from './config.ts';
import type { Logger } from './lib/log.ts';
import type { SettingsService } from './settings/service.ts';
import type { Store } from './store.ts';
import type { VideoService } from './video/service.ts';
import type { VoiceService } from './voice/service.ts';
import type { VoiceSettingsStore } from './voice/settings.ts';

/** What command handlers may call. Handlers stay thin: the work happens in these services. */
export interface Services {
  config: BotConfig;
  log: Logger;
  store: Store;
  settings: SettingsService;
  video: VideoService;
  voice: VoiceService;
  voiceSettings: VoiceSettingsStore;
}
