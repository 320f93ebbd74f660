import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { FRAME_SAMPLES } from '../../src/voice/audio/format.ts';
import { SpeakerMixer } from '../../src/voice/audio/mixer.ts';
import { InputPump } from '../../src/voice/input-pump.ts';

function pumpWith(silenceTailMs: number, maxBacklogFrames?: number) {
  const mixer = new SpeakerMixer();
  const sent: Int16Array[] = [];
  const sink = { bufferedAmount: 0, appendAudio: (pcm: Int16Array) => sent.push(pcm) };
  const pump = new InputPump({ mixer, log: silentLogger, silenceTailMs, highWaterMarkBytes: 1000, ...(maxBacklogFrames ? { maxBacklogFrames } : {}) });
  pump.sink = sink;
  return { mixer, sent, sink, pump };
}

const voiced = () => new Int16Array(FRAME_SAMPLES).fill(1000);

describe('the input pump', () => {
  it('sends each 20 ms of speech at once, then silence for the tail so server VAD can end the turn', () => {
    const { mixer, sent, pump } = pumpWith(60);
    mixer.push('a', voiced());
    pump.tick();
    for (let tick = 0; tick < 5; tick++) pump.tick();
    expect(sent.map((pcm) => pcm.length)).toEqual([FRAME_SAMPLES, FRAME_SAMPLES, FRAME_SAMPLES, FRAME_SAMPLES]);
    expect(sent[0]![0]).toBe(1000);
    expect(sent.slice(1).every((pcm) => pcm.every((sample) => sample === 0))).toBe(true);
  });

  it('sends nothing while nobody speaks and the tail is over', () => {
    const { sent, pump } = pumpWith(0);
    for (let tick = 0; tick < 10; tick++) pump.tick();
    expect(sent).toEqual([]);
  });

  it('batches frames while the socket is backed up, and drops the oldest beyond the backlog', () => {
    const { mixer, sent, sink, pump } = pumpWith(0, 3);
    sink.bufferedAmount = 5000;
    for (let tick = 0; tick < 5; tick++) {
      mixer.push('a', voiced());
      pump.tick();
    }
    expect(sent).toEqual([]);
    expect(pump.droppedFrames).toBe(2);
    sink.bufferedAmount = 0;
    mixer.push('a', voiced());
    pump.tick();
    expect(sent).toHaveLength(1);
    expect(sent[0]!.length).toBe(4 * FRAME_SAMPLES);
  });
});
