/** Types of scripts/schema-types.mjs (for test/ui/schema-types.test.ts). */
export declare const OUT_DIR: string;
export declare const TYPES: Readonly<Record<string, string>>;
export declare function generate(outDir?: string): Promise<string[]>;
