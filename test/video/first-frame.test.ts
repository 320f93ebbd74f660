import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { FIRST_FRAME_LIMITS, FirstFrames, decoderInstalled, frameDataUri } from '../../src/video/first-frame.ts';

// The first frame of an mp4, decoded by ffmpeg.wasm in a process of its own: the emulator's clip
// (Constrained Baseline, 160x90 colour bars under a timer) and a 64x36 High-profile clip (CABAC, B-frames,
// 8x8 transform: what providers deliver), made with the same ffmpeg.wasm's libx264 from its `testsrc`
// pattern.

const SAMPLE = fileURLToPath(new URL('../../src/emulator/fixtures/sample.mp4', import.meta.url));
const HIGH_PROFILE = fileURLToPath(new URL('./fixtures/high-profile.mp4', import.meta.url));

type Colour = 'red' | 'green' | 'blue' | 'cyan' | 'magenta' | 'yellow';
const COLOURS: Record<Colour, [number, number, number]> = {
  red: [1, 0, 0],
  green: [0, 1, 0],
  blue: [0, 0, 1],
  cyan: [0, 1, 1],
  magenta: [1, 0, 1],
  yellow: [1, 1, 0],
};

/** The bar colour at (x, y): each channel near full or near none, as the test patterns draw them. */
function colourAt(png: PNG, x: number, y: number): Colour | undefined {
  const offset = (y * png.width + x) * 4;
  const channels = [png.data[offset]!, png.data[offset + 1]!, png.data[offset + 2]!];
  if (channels.some((value) => value > 60 && value < 190)) return undefined;
  const bits = channels.map((value) => (value >= 190 ? 1 : 0));
  return (Object.keys(COLOURS) as Colour[]).find((name) => COLOURS[name].every((bit, index) => bit === bits[index]));
}

async function decoded(path: string): Promise<PNG> {
  const result = await new FirstFrames().extract(path);
  if (!result.ok) throw new Error(result.message);
  expect(result.frame.mediaType).toBe('image/png');
  expect(frameDataUri(result.frame)).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
  const png = PNG.sync.read(result.frame.bytes);
  expect([png.width, png.height]).toEqual([result.frame.width, result.frame.height]);
  return png;
}

describe('the first frame of a video', () => {
  it("is the emulator's clip's colour bars, 160x90", async () => {
    const png = await decoded(SAMPLE);
    expect([png.width, png.height]).toEqual([160, 90]);
    const middle = 45;
    expect([10, 30, 90, 130].map((x) => colourAt(png, x, middle))).toEqual(['red', 'green', 'blue', 'magenta']);
  });

  it('decodes High profile as well, at its size', async () => {
    const png = await decoded(HIGH_PROFILE);
    expect([png.width, png.height]).toEqual([64, 36]);
    expect([12, 20, 52].map((x) => colourAt(png, x, 18))).toEqual(['cyan', 'magenta', 'red']);
  });

  it('is refused, not waited for, past its deadline or over its input size', async () => {
    const late = await new FirstFrames({ ...FIRST_FRAME_LIMITS, deadlineMs: 1 }).extract(SAMPLE);
    expect(late).toMatchObject({ ok: false, message: expect.stringMatching(/longer than 1 ms/) });
    const large = await new FirstFrames({ ...FIRST_FRAME_LIMITS, maxInputBytes: 1000 }).extract(SAMPLE);
    expect(large).toMatchObject({ ok: false, message: expect.stringMatching(/over the 1000/) });
    const notVideo = await new FirstFrames().extract(fileURLToPath(import.meta.url));
    expect(notVideo).toMatchObject({ ok: false, message: expect.stringMatching(/could not decode/) });
  });

  it('is refused without its decoder, an optional dependency, at once', async () => {
    expect(decoderInstalled()).toBe(true);
    const absent = await new FirstFrames(FIRST_FRAME_LIMITS, false).extract(SAMPLE);
    expect(absent).toEqual({ ok: false, message: 'the frame decoder (@ffmpeg/core) is not installed' });
  });
});
