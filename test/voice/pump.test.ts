import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { FRAME_SAMPLES } from '../../src/voice/audio/format.ts';
import { SpeakerMixer } from '../../src/voice/audio/mixer.ts';
import { InputPump, type TrailingSilence } from '../../src/voice/input-pump.ts';

// The input pump on a fake clock: when each frame leaves for the gateway, and when nothing runs at all.

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Server VAD as the session sets it up: a turn ends after half a second of silence. */
const SERVER_VAD: TrailingSilence = { afterMs: 500, feedMs: 1000 };

function pumpWith(trailingSilence: TrailingSilence | undefined, options: { maxBacklogFrames?: number; framesPerAppend?: number } = {}) {
  const mixer = new SpeakerMixer();
  const sent: { at: number; pcm: Int16Array }[] = [];
  // The pump reuses what it appends: the sink keeps a copy.
  const sink = { bufferedAmount: 0, appendAudio: (pcm: Int16Array) => sent.push({ at: performance.now(), pcm: pcm.slice() }) };
  const pump = new InputPump({ mixer, log: silentLogger, trailingSilence, highWaterMarkBytes: 1000, ...options });
  pump.sink = sink;
  pump.start();
  /** A decoded packet of `speaker` arrives now. */
  const arrive = (speaker: string, value = 1000) => {
    mixer.push(speaker, new Int16Array(FRAME_SAMPLES).fill(value), performance.now());
    pump.audioArrived();
  };
  return { mixer, sent, sink, pump, arrive };
}

describe('the input pump', () => {
  it("sends a speaker's frame the moment it arrives, without waiting for a tick", () => {
    const { sent, arrive } = pumpWith(undefined);
    const start = performance.now();
    for (let packet = 0; packet < 3; packet++) {
      arrive('a');
      vi.advanceTimersByTime(20);
    }
    expect(sent.map((entry) => entry.at - start)).toEqual([0, 20, 40]);
  });

  it('sends no silence while a speaker pauses, then all the trailing silence in one append once the VAD would end the turn', () => {
    const { sent, arrive } = pumpWith({ afterMs: 100, feedMs: 200 });
    const start = performance.now();
    arrive('a');
    vi.advanceTimersByTime(1000);
    expect(sent.map((entry) => [entry.at - start, entry.pcm.length / FRAME_SAMPLES, entry.pcm[0]])).toEqual([
      [0, 1, 1000],
      [100, 10, 0],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("puts a pause's silence ahead of the speech that ends it, so the gateway hears the pause as it was", () => {
    const { sent, arrive } = pumpWith(SERVER_VAD);
    arrive('a');
    vi.advanceTimersByTime(100);
    expect(sent).toHaveLength(1);
    arrive('a', 2000);
    // 100 ms after the last packet: its own 20 ms, then 80 ms the speaker said nothing.
    expect(sent).toHaveLength(2);
    expect(Array.from({ length: 5 }, (_, frame) => sent[1]!.pcm[frame * FRAME_SAMPLES])).toEqual([0, 0, 0, 0, 2000]);
  });

  it('runs no timer at all while nobody speaks', () => {
    const { sent } = pumpWith(SERVER_VAD);
    vi.advanceTimersByTime(1000);
    expect(sent).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps speech that arrives a little late as speech, with no silence slipped in', () => {
    const { sent, arrive } = pumpWith(SERVER_VAD);
    arrive('a');
    vi.advanceTimersByTime(35);
    arrive('a');
    expect(sent.map((entry) => entry.pcm[0])).toEqual([1000, 1000]);
  });

  it("mixes two speakers' frames of one slot, and does not wait more than a frame for a missing one", () => {
    const { sent, arrive } = pumpWith(undefined);
    // Both start talking (each first packet goes out alone: the other was not speaking yet).
    arrive('a', 100);
    arrive('b', 200);
    vi.advanceTimersByTime(20);
    sent.length = 0;
    arrive('a', 100);
    expect(sent).toEqual([]);
    arrive('b', 200);
    expect(sent.map((entry) => entry.pcm[0])).toEqual([300]);
    vi.advanceTimersByTime(20);
    arrive('a', 100);
    // b's packet for this slot never comes.
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(20);
    expect(sent.map((entry) => entry.pcm[0])).toEqual([300, 100]);
  });

  it('batches frames while the socket is backed up, and drops the oldest beyond the backlog', () => {
    const { sent, sink, pump, arrive } = pumpWith(undefined, { maxBacklogFrames: 3 });
    sink.bufferedAmount = 5000;
    for (let packet = 0; packet < 5; packet++) arrive('a');
    expect(sent).toEqual([]);
    expect(pump.droppedFrames).toBe(2);
    sink.bufferedAmount = 0;
    arrive('a');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.pcm.length).toBe(4 * FRAME_SAMPLES);
  });

  it('puts two frames in each append when asked, and holds none longer than about a frame', () => {
    const { sent, arrive } = pumpWith({ afterMs: 60, feedMs: 80 }, { framesPerAppend: 2 });
    const start = performance.now();
    for (let packet = 0; packet < 3; packet++) {
      arrive('a');
      vi.advanceTimersByTime(20);
    }
    vi.advanceTimersByTime(1000);
    // Speech 1+2 together when 2 arrives; 3 alone 25 ms after it came; then the trailing silence at once.
    expect(sent.map((entry) => [entry.at - start, entry.pcm.length / FRAME_SAMPLES, entry.pcm[0]])).toEqual([
      [20, 2, 1000],
      [65, 1, 1000],
      [100, 4, 0],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
