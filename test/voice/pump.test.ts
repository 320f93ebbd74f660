import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { FRAME_SAMPLES } from '../../src/voice/audio/format.ts';
import { SpeakerMixer } from '../../src/voice/audio/mixer.ts';
import { InputPump } from '../../src/voice/input-pump.ts';

// The input pump on a fake clock: when each frame leaves for the gateway, and when nothing runs at all.

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

function pumpWith(silenceTailMs: number, options: { maxBacklogFrames?: number; framesPerAppend?: number } = {}) {
  const mixer = new SpeakerMixer();
  const sent: { at: number; pcm: Int16Array }[] = [];
  const sink = { bufferedAmount: 0, appendAudio: (pcm: Int16Array) => sent.push({ at: performance.now(), pcm }) };
  const pump = new InputPump({ mixer, log: silentLogger, silenceTailMs, highWaterMarkBytes: 1000, ...options });
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
    const { sent, arrive } = pumpWith(0);
    const start = performance.now();
    for (let packet = 0; packet < 3; packet++) {
      arrive('a');
      vi.advanceTimersByTime(20);
    }
    expect(sent.map((entry) => entry.at - start)).toEqual([0, 20, 40]);
  });

  it('feeds silence on a 20 ms clock after speech so server VAD can end the turn, then stops', () => {
    const { sent, arrive } = pumpWith(60);
    arrive('a');
    vi.advanceTimersByTime(1000);
    expect(sent.map((entry) => entry.pcm[0])).toEqual([1000, 0, 0, 0]);
    expect(sent.slice(2).map((entry, index) => entry.at - sent[index + 1]!.at)).toEqual([20, 20]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs no timer at all while nobody speaks', () => {
    const { sent } = pumpWith(1000);
    vi.advanceTimersByTime(1000);
    expect(sent).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps speech that arrives a little late as speech, with no silence slipped in', () => {
    const { sent, arrive } = pumpWith(1000);
    arrive('a');
    vi.advanceTimersByTime(35);
    arrive('a');
    expect(sent.map((entry) => entry.pcm[0])).toEqual([1000, 1000]);
  });

  it("mixes two speakers' frames of one slot, and does not wait more than a frame for a missing one", () => {
    const { sent, arrive } = pumpWith(0);
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
    const { sent, sink, pump, arrive } = pumpWith(0, { maxBacklogFrames: 3 });
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
    const { sent, arrive } = pumpWith(80, { framesPerAppend: 2 });
    const start = performance.now();
    for (let packet = 0; packet < 3; packet++) {
      arrive('a');
      vi.advanceTimersByTime(20);
    }
    vi.advanceTimersByTime(1000);
    // Speech 1+2 together when 2 arrives; 3 alone 25 ms after it came; then the silence, two frames at a time.
    expect(sent.map((entry) => [entry.at - start, entry.pcm.length / FRAME_SAMPLES, entry.pcm[0]])).toEqual([
      [20, 2, 1000],
      [65, 1, 1000],
      [80, 2, 0],
      [120, 2, 0],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
