import re,statistics,glob,sys
d='/tmp/rt'
def med(v): return statistics.median(v)
for kind,key in (('mf','updates_per_s_per_thread'),('lda','tokens_per_s_per_thread')):
    vals={}
    for line in open(f'{d}/{kind}.txt'):
        rev=line.split()[0]; m=re.search(key+r'=(\d+)',line)
        if m: vals.setdefault(rev,[]).append(float(m.group(1)))
    for rev,v in vals.items():
        v=sorted(v); q=statistics.quantiles(v,n=4) if len(v)>=4 else (v[0],med(v),v[-1])
        print(kind,rev,len(v),'median %.2fM'%(med(v)/1e6),'q1-q3 %.2f-%.2fM'%(q[0]/1e6,q[2]/1e6),'range %.2f-%.2fM'%(v[0]/1e6,v[-1]/1e6))
    rm={}
    for line in open(f'{d}/{kind}.txt'):
        rev=line.split()[0]; m=re.search(r'test_rmse=([\d.]+)',line)
        if m: rm.setdefault(rev,[]).append(m.group(1))
    for rev,v in rm.items(): print(' rmse',rev,min(v),max(v))
for rev in ('b217da7','44aae5c'):
    rows={}; gi=[]
    for f in sorted(glob.glob(f'{d}/bench_core_{rev}_run*.txt')):
        for line in open(f):
            m=re.match(r'get\+inc from cache: ([\d.]+) ns',line)
            if m: gi.append(float(m.group(1)))
            m=re.match(r'^(\d+)\s+([\d.]+)\s',line)
            if m: rows.setdefault(int(m.group(1)),[]).append(float(m.group(2)))
    print('bench_core',rev,'get+inc ns',sorted(gi),'bsp round medians',{k:med(v) for k,v in sorted(rows.items())},'ranges',{k:(min(v),max(v)) for k,v in sorted(rows.items())})
