# The per-cell samples/s, the summed timeline metrics, and each cell's warm-up and wall time, of runs of one database, side by side.
# Usage: summarize.py DLBENCH DB RUN,RUN,... MODE,MODE,...
import json, subprocess, sys
B=sys.argv[1]
def load(db, run):
    d=json.loads(subprocess.run([B,'--db',db,'export',str(run),'--format','json'],capture_output=True,text=True).stdout)
    cells=d['cells'] if 'cells' in d else d['runs'][0]['cells']
    out=[]
    for c in cells:
        m=c['metrics']
        g=lambda k: (m.get(k) or {}).get('value', 0.0) or 0.0
        out.append(dict(idx=c['index'],label=c['label'],verdict=c.get('verdict'),sps=g('samples_per_s'),hello=g('time_to_hello_s'),setup=g('setup_s'),warm=g('warmup_s'),ttm=g('time_to_measure_s'),wall=g('cell_wall_s'),win=g('measured_window_s'),pid=c['extras'].get('runner_process',{}).get('pid') or ('cell',c['index']),cop=c['extras'].get('runner_process',{}).get('cell_of_process')))
    return out
db=sys.argv[2]; runs=[int(x) for x in sys.argv[3].split(',')]; modes=sys.argv[4].split(',')
data=[load(db,r) for r in runs]
hdr="| cell | " + " | ".join(f"{m} (run {r})" for m,r in zip(modes,runs)) + " |"
print(hdr); print("|---"*(len(runs)+1)+"|")
for i in range(len(data[0])):
    lab=data[0][i]['label'].split(' image_size')[0].split(' layers')[0]
    print(f"| {i} {lab} | " + " | ".join(f"{d[i]['sps']:.0f}/s {d[i]['verdict']}" for d in data) + " |")
print()
print("| run | mode | sum time_to_hello_s | sum setup_s | sum warmup_s | sum measured_window_s | sum cell_wall_s | processes |")
print("|---|---|---|---|---|---|---|---|")
for m,r,d in zip(modes,runs,data):
    procs=len({c['pid'] for c in d})  # a cell without runner_process had its own
    print(f"| {r} | {m} | {sum(c['hello'] for c in d):.2f} | {sum(c['setup'] for c in d):.2f} | {sum(c['warm'] for c in d):.2f} | {sum(c['win'] for c in d):.2f} | {sum(c['wall'] for c in d):.2f} | {procs} |")
print()
print("| cell | " + " | ".join(f"{m}: warm-up / cell wall" for m in modes) + " |")
print("|---"*(len(runs)+1)+"|")
for i in range(len(data[0])):
    lab=data[0][i]['label'].split(' image_size')[0].split(' layers')[0]
    print(f"| {i} {lab} | " + " | ".join(f"{d[i]['warm']:.2f} s / {d[i]['wall']:.2f} s" for d in data) + " |")
