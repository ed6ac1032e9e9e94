#!/usr/bin/env python3
"""Recall on real bug-fix commits (labels.jsonl, see README.md).

For each labelled bug, the parent commit's tree (the code with the bug) and the fix commit's
tree are read from a local git mirror of the repository, text files only, and checked with
the given torchvet binary twice: default rules and `--select ALL --preview`. A bug counts as
found at its line when a finding sits within WIN lines (default 3) of a labelled line of the
labelled file and that rule fires less often in the file after the fix. Findings of the file
that the fix removes but that sit elsewhere are listed for a reader to judge (the same bug
reported where the object is built, for instance).

usage: measure.py TORCHVET_BIN TAG   (env: MIRROR, TREES, LABELS, WIN)
"""
import json, sys, os, subprocess, collections
BIN=sys.argv[1]; TAG=sys.argv[2]; WIN=int(os.environ.get('WIN','3'))
HERE=os.path.dirname(os.path.abspath(__file__))
MIRROR=os.environ.get('MIRROR','/work/.mirror')
TREES=os.environ.get('TREES','/tmp/fix-commit-trees')
LABELS=os.environ.get('LABELS',os.path.join(HERE,'labels.jsonl'))
os.makedirs(TREES,exist_ok=True)
labels=[]
for f in [LABELS]:
    for l in open(f):
        l=l.strip()
        if not l: continue
        try: x=json.loads(l)
        except Exception as e: print('bad line',f,e); continue
        x['src']=os.path.basename(f); labels.append(x)
def tree(gitdir, sha):
    if os.path.isdir(gitdir.rstrip('/')+'/.git'): gitdir=gitdir.rstrip('/')+'/.git'
    d=f"{TREES}/{os.path.basename(os.path.dirname(gitdir.rstrip('/').removesuffix('/.git')))}-{sha[:10]}"
    if not os.path.isdir(d):
        os.makedirs(d)
        # Text files only, one by one: snapshots may lack their largest blobs.
        ls=subprocess.run(['git','--git-dir',gitdir,'ls-tree','-r','-l',sha],capture_output=True,text=True)
        if ls.returncode:
            subprocess.run(['rm','-rf',d]); return None
        want=[]
        for line in ls.stdout.splitlines():
            meta,path=line.split('\t',1)
            mode,typ,obj,size=meta.split()
            if typ!='blob' or not size.isdigit() or int(size)>3_000_000: continue
            base=os.path.basename(path)
            if base.endswith(('.py','.ipynb','.txt','.toml','.cfg','.yml','.yaml','.md','.rst','.in','.lock')) or base.startswith(('Dockerfile','setup','requirements','Pipfile','environment')):
                want.append((obj,path))
        for obj,path in want:
            b=subprocess.run(['git','--git-dir',gitdir,'cat-file','blob',obj],capture_output=True)
            if b.returncode: continue
            p=os.path.join(d,path); os.makedirs(os.path.dirname(p),exist_ok=True)
            open(p,'wb').write(b.stdout)
        subprocess.run(['git','init','-q',d])  # a repository root, as the user's clone
    return d
cache={}
def run(d, mode):
    k=(d,mode)
    if k in cache: return cache[k]
    args=[BIN,'check','.','--no-cache','--output-format','json','--quiet']
    if mode=='all': args+=['--select','ALL','--preview']
    p=subprocess.run(args,cwd=d,capture_output=True,text=True)
    try: r=json.loads(p.stdout or '[]')
    except Exception: r=[]
    cache[k]=r; return r
def near(findings, file, lines):
    out=[]
    for f in findings:
        fn=os.path.normpath(f['filename'])
        if fn!=os.path.normpath(file): continue
        row=f['location']['row']
        if any(abs(row-l)<=WIN for l in lines): out.append((f['name'],row))
    return out
rows=[]
for x in labels:
    g=os.path.join(MIRROR, x['repo'].replace('/','+'), 'repo')
    if not os.path.isdir(g): print('no mirror of',x['repo']); continue
    dp=tree(g,x['parent_sha']); df=tree(g,x['fix_sha'])
    if not dp: print('no tree',x['repo']); continue
    r={'repo':x['repo'],'kind':x['kind'],'file':x['file'],'lines':x['lines'],'src':x['src'],'desc':x.get('desc','')}
    for mode in ('default','all'):
        hp=near(run(dp,mode),x['file'],x['lines'])
        # gone after the fix: the same rule no longer fires anywhere near (lines shift; use the rule in the file)
        rules_after=collections.Counter(f['name'] for f in run(df,mode) if os.path.normpath(f['filename'])==os.path.normpath(x['file'])) if df else collections.Counter()
        rules_before=collections.Counter(f['name'] for f in run(dp,mode) if os.path.normpath(f['filename'])==os.path.normpath(x['file']))
        gone=[n for n,_ in hp if rules_after[n]<rules_before[n]]
        r[mode]=hp; r[mode+'_gone']=gone
        r[mode+'_elsewhere']=[n for n in rules_before if rules_after[n]<rules_before[n] and n not in gone]
        # Other files: rules that fire less often after the fix (the bug reported where the
        # value is used, in another file).
        other=lambda rs: collections.Counter(f['name'] for f in rs if os.path.normpath(f['filename'])!=os.path.normpath(x['file']))
        ob=other(run(dp,mode)); oa=other(run(df,mode)) if df else collections.Counter()
        r[mode+'_other_files']=[n for n in ob if oa[n]<ob[n]]
    rows.append(r)
json.dump(rows,open(os.path.join(TREES, f'out-{TAG}.json'),'w'),indent=1)
n=len(rows)
for mode in ('default','all'):
    hit=sum(1 for r in rows if r[mode]); hg=sum(1 for r in rows if r[mode+'_gone'])
    el=sum(1 for r in rows if not r[mode+'_gone'] and r[mode+'_elsewhere'])
    of=sum(1 for r in rows if not r[mode+'_gone'] and not r[mode+'_elsewhere'] and r[mode+'_other_files'])
    print(f"{mode}: at the line {hit}/{n}, at the line and gone after the fix {hg}/{n}; to judge: elsewhere in the file {el}, in other files only {of}")
by=collections.defaultdict(lambda:[0,0,0])
for r in rows:
    b=by[r['kind']]; b[0]+=1; b[1]+= bool(r['default_gone']); b[2]+=bool(r['all_gone'])
for k,(a,b,c) in sorted(by.items(),key=lambda t:-t[1][0]): print(f"  {k:24s} {a:3d}  default {b:3d}  all {c:3d}")
