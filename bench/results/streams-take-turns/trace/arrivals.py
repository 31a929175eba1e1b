# When a rank had its results: the median over ranks and operations of the time (ms, from the
# operation's first write on any rank) by which 1 %, 10 %, ... 100 % of its results were in.
# Usage: python3 arrivals.py <directory holding logs/ours-rank*.err>
import sys,glob,re,collections,statistics
d=sys.argv[1]; W=int(sys.argv[2]) if len(sys.argv)>2 else 4
ops=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(d+'/logs/ours-rank*.err'):
    r=int(re.search(r'rank(\d+)',f).group(1))
    for l in open(f):
        if not l.startswith('TR'): continue
        kv=dict(x.split('=') for x in l.split()[2:])
        ops[int(kv['seq'])][r].append((l.split()[1],int(kv['t']),kv))
q=collections.defaultdict(list)
for seq in sorted(ops):
    o=ops[seq]
    if len(o)<W or seq>=40: continue
    start=min(e[1] for r in o for e in o[r] if e[0]=='wr')
    for r in o:
        res=sorted((e[1],int(e[2]['n'])*4) for e in o[r] if e[0]=='res')
        tot=sum(b for _,b in res); acc=0; marks=[0.01,0.1,0.25,0.5,0.75,0.9,0.99,1.0]; mi=0
        for t,b in res:
            acc+=b
            while mi<len(marks) and acc>=marks[mi]*tot-1:
                q[marks[mi]].append((t-start)/1000); mi+=1
print(d.split('/')[-1], ' '.join(f"{m}:{statistics.median(v):.1f}" for m,v in sorted(q.items())))
