# How many writes each rank made to the first stream of an operation before writing any other
# stream: {writes: rank-operations}. 1 means the streams took turns from the first write.
# Usage: python3 first_stream_runs.py <directory holding logs/ours-rank*.err> [reducers]
import sys,glob,re,collections,statistics
d=sys.argv[1]; R=int(sys.argv[2]) if len(sys.argv)>2 else 4
runs=collections.Counter()
for f in glob.glob(d+'/logs/ours-rank*.err'):
    ops=collections.defaultdict(list)
    for l in open(f):
        if l.startswith('TR wr'):
            kv=dict(x.split('=') for x in l.split()[2:]); ops[int(kv['seq'])].append(kv)
    for seq,ws in ops.items():
        if seq>=40: continue
        s0=(seq+int(ws[0]['piece']))%R; n=0
        for kv in ws:
            if (seq+int(kv['piece']))%R!=s0: break
            n+=1
        runs[n]+=1
print(d.split('/')[-1], sorted(runs.items()))
