// The part of @ffmpeg/core (ffmpeg.wasm's single-threaded core, an emscripten module) the first-frame
// decoder (first-frame-decoder.ts) and the benchmark use. The package ships no types of its own.
declare module '@ffmpeg/core' {
  export interface FfmpegCoreOptions {
    /** The module's wasm, handed in: the core would fetch it (a browser's way) otherwise. */
    wasmBinary: Uint8Array;
  }

  export interface FfmpegCore {
    /** Runs ffmpeg with these arguments (after `ffmpeg -nostdin -y`); its exit code. */
    exec(...args: string[]): number;
    setLogger(logger: (entry: { type: string; message: string }) => void): void;
    /** Stops a run after this many ms (checked between packets); -1: no limit. */
    setTimeout(timeoutMs: number): void;
    FS: {
      writeFile(path: string, data: Uint8Array): void;
      readFile(path: string): Uint8Array;
      analyzePath(path: string): { exists: boolean };
    };
  }

  const createFFmpegCore: (options: FfmpegCoreOptions) => Promise<FfmpegCore>;
  export default createFFmpegCore;
}
