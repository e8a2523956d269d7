// ort_infer.js - inference latency of an ONNX model in ONNX Runtime
// (the npm package onnxruntime-node), measured as bench_infer measures
// popc: create the session, one warm-up run, then the median of RUNS runs.
//
// Usage: node ort_infer.js MODEL.onnx INPUT.npy [RUNS [THREADS]]
// NODE_PATH must reach onnxruntime-node (bench_infer.sh installs it).
// Prints one JSON line like bench_infer's (cpu_ms: the process's CPU
// time per run, all threads).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

// A little-endian float32, C-order .npy (what torch_models.py writes).
function readNpy(path) {
    const buf = fs.readFileSync(path);
    const headerLen = buf.readUInt16LE(8);
    const header = buf.toString('latin1', 10, 10 + headerLen);
    if (!header.includes("'<f4'") || header.includes("'fortran_order': True"))
        throw new Error(`${path}: only little-endian float32 C-order .npy`);
    const dims = header.match(/'shape': \(([^)]*)\)/)[1]
        .split(',').map(s => s.trim()).filter(s => s).map(Number);
    const start = 10 + headerLen;
    const data = new Float32Array(buf.buffer.slice(buf.byteOffset + start,
        buf.byteOffset + buf.length));
    return new ort.Tensor('float32', data, dims);
}

async function main() {
    const [model, input, runsArg, threadsArg] = process.argv.slice(2);
    const runs = Number(runsArg || 20);
    const threads = Number(threadsArg || 2);
    const t0 = performance.now();
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: threads, interOpNumThreads: 1,
        graphOptimizationLevel: 'all', executionMode: 'sequential'});
    const createMs = performance.now() - t0;
    const feeds = {[session.inputNames[0]]: readNpy(input)};
    const ms = [];
    let out, cpu0;
    for (let i = -1; i < runs; i++) {
        const t = performance.now();
        out = await session.run(feeds);
        if (i >= 0)
            ms.push(performance.now() - t);
        else
            cpu0 = process.cpuUsage();
    }
    const cpu = process.cpuUsage(cpu0);
    ms.sort((a, b) => a - b);
    const y = out[session.outputNames[0]].data;
    let sum = 0;
    for (const v of y)
        sum += v;
    console.log(JSON.stringify({framework: 'onnxruntime', version:
        require('onnxruntime-node/package.json').version, threads,
        compile_ms: createMs, median_ms: ms[runs >> 1], min_ms: ms[0],
        max_ms: ms[runs - 1],
        cpu_ms: (cpu.user + cpu.system) / 1000 / runs, checksum: sum}));
}

main().catch(e => { console.error(`ort_infer: ${e.message}`); process.exit(1); });
