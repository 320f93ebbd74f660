import { describe, expect, it } from 'vitest';
import { isRealtimeModel, videoModelCapabilities } from '../../src/gateway/spec.ts';

describe('video model families', () => {
  it.each([
    ['svc-imagine-video-1.5', 'svc', 'versioned', true],
    ['SVC-Imagine-Video-1.5', 'svc', 'versioned', true],
    ['svc-imagine-video-2.0', 'svc', 'versioned', true],
    ['svc-imagine-video-1.0', 'svc', 'versioned', false],
    ['svc-imagine-video', 'svc', 'classic', false],
    ['acme-imagine-video-1.5', 'acme', 'versioned', true],
    ['svc-imagine-video-1.5-preview', 'svc', 'versioned', true],
    ['svc-imagine-video-2', 'svc', 'versioned', true],
    ['svc-imagine-video-2-fast', 'svc', 'versioned', true],
    ['svc-imagine-video-1.5-20250601', 'svc', 'versioned', true],
    ['svc-imagine-video-1.0-beta', 'svc', 'versioned', false],
    ['svc-imagine-video-preview', 'svc', 'classic', false],
  ] as const)('%s (vendor %s) is %s, modern capabilities %s', (model, vendor, family, modern) => {
    const capabilities = videoModelCapabilities(model, vendor);
    expect(capabilities?.family).toBe(family);
    expect(capabilities?.lastFrame).toBe(modern);
    expect(capabilities?.referenceAudio).toBe(modern);
    expect(capabilities?.fullHd).toBe(modern);
  });

  it('does not recognise another vendor or a voice model as a video model', () => {
    expect(videoModelCapabilities('svc-imagine-video-1.5', 'acme')).toBeUndefined();
    expect(videoModelCapabilities('svc-voice-latest', 'svc')).toBeUndefined();
    for (const name of [
      'svc-imagine-video-1.5x',
      'svc-imagine-video-',
      'svc-imagine-video--1.5',
      'svc-imagine-videos',
      'svc-imagine-video-1.5 preview',
    ]) {
      expect(videoModelCapabilities(name, 'svc'), name).toBeUndefined();
    }
  });

  it('recognises realtime models by vendor', () => {
    expect(isRealtimeModel('svc-voice-latest')).toBe(true);
    expect(isRealtimeModel('acme-voice-think-fast-2.0', 'acme')).toBe(true);
    expect(isRealtimeModel('svc-imagine-video-1.5')).toBe(false);
  });
});
