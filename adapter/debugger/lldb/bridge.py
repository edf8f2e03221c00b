# The LLDB bridge: a small Python 3 program that drives LLDB through its SB API and speaks JSON
# lines on stdin/stdout. Requests {"id", "op", ...} get {"id", "ok", "result"|"error"}; target
# events arrive as {"event": "stopped"|"running"|"exited"|"output", ...} from a listener thread.
# Numbers that may exceed 2^53 (addresses, register values) travel as hex strings.
#
# The adapter runs it as `python3 -u bridge.py` (adapter/debugger/lldb/bridgeLocation.ts finds it:
# dist/lldb/ in the package, this folder in a checkout). `npm run lint` checks its syntax.
import glob, json, os, sys, threading

def find_lldb():
    try:
        import lldb
        if hasattr(lldb, 'SBDebugger'):
            return lldb
        # Debian's /usr/lib/python3/dist-packages/lldb has no __init__.py: an empty namespace package.
        del sys.modules['lldb']
    except ImportError:
        pass
    # Debian installs the module under LLVM's own tree, off Python's path.
    for d in sorted(glob.glob('/usr/lib/llvm-*/lib/python3*/dist-packages'), reverse=True):
        if os.path.isfile(os.path.join(d, 'lldb', '__init__.py')):
            sys.path.insert(0, d)
            try:
                import lldb
                return lldb
            except ImportError as e:
                sys.stdout.write(json.dumps({'event': 'fatal', 'message': 'LLDB\'s Python module in ' + d + ' does not load (' + str(e) + '). Debian\'s python3-lldb-14 ships a dangling _lldb symlink: run "node scripts/setup.mjs" (or: ln -sfn ../../../liblldb.so.1 ' + d + '/lldb/_lldb.cpython-*.so).'}) + '\n')
                sys.stdout.flush()
                sys.exit(3)
    sys.stdout.write(json.dumps({'event': 'fatal', 'message': 'LLDB\'s Python module was not found. Install it (Debian: apt-get install lldb-14 python3-lldb-14) or set lldbPython to a Python that has it.'}) + '\n')
    sys.stdout.flush()
    sys.exit(3)

lldb = find_lldb()
out_lock = threading.Lock()

def send(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + '\n')
        sys.stdout.flush()

class Failure(Exception):
    pass

dbg = lldb.SBDebugger.Create(False)
dbg.SetAsync(True)
# Device registers (SysTick, DWT) change without the debugger: a cached read would be stale.
dbg.HandleCommand('settings set target.process.disable-memory-cache true')
target = None
process = None
values = {}
next_value = [1]
# A one-shot breakpoint is gone when its stop is reported, and LLDB then names no breakpoint.
one_shot = {}
REASONS = {
    lldb.eStopReasonBreakpoint: 'breakpoint', lldb.eStopReasonPlanComplete: 'step', lldb.eStopReasonTrace: 'step',
    lldb.eStopReasonWatchpoint: 'watchpoint', lldb.eStopReasonSignal: 'signal', lldb.eStopReasonException: 'exception',
}
stop_waiters = []

def hx(n):
    return '0x%x' % n

def frame_of(f):
    le = f.GetLineEntry()
    fs = le.GetFileSpec()
    path = str(fs) if fs.IsValid() and fs.GetFilename() else None
    name = f.GetFunctionName()
    return {'level': f.GetFrameID(), 'address': hx(f.GetPC()), 'func': name, 'file': fs.GetFilename() if path else None,
            'fullname': path, 'line': le.GetLine() if path and le.GetLine() > 0 else None}

def stop_event():
    th = process.GetSelectedThread()
    if not th.IsValid():
        th = process.GetThreadAtIndex(0)
    r = th.GetStopReason()
    ids = []
    desc = None
    if r == lldb.eStopReasonBreakpoint:
        ids = [th.GetStopReasonDataAtIndex(i) for i in range(0, th.GetStopReasonDataCount(), 2)]
        if not ids:
            pc = th.GetFrameAtIndex(0).GetPC()
            ids = [i for i, a in one_shot.items() if a == pc]
        for i in ids:
            one_shot.pop(i, None)
    elif r == lldb.eStopReasonWatchpoint:
        ids = [1000000 + th.GetStopReasonDataAtIndex(0)]
    elif r == lldb.eStopReasonSignal:
        desc = process.GetUnixSignals().GetSignalAsCString(th.GetStopReasonDataAtIndex(0))
    elif r == lldb.eStopReasonException:
        desc = th.GetStopDescription(200)
    reason = REASONS.get(r, 'unknown')
    if reason == 'signal' and desc in ('SIGINT', 'SIGTRAP', 'SIGSTOP'):
        reason = 'pause'
    ev = {'event': 'stopped', 'reason': reason, 'threadId': th.GetIndexID(), 'breakpointIds': ids, 'frame': frame_of(th.GetFrameAtIndex(0))}
    if desc:
        ev['description'] = desc
    return ev

def listen():
    listener = dbg.GetListener()
    event = lldb.SBEvent()
    while True:
        if not listener.WaitForEvent(1, event):
            continue
        if not lldb.SBProcess.EventIsProcessEvent(event):
            continue
        st = lldb.SBProcess.GetStateFromEvent(event)
        if lldb.SBProcess.GetRestartedFromEvent(event):
            continue
        for getter, cat in ((process.GetSTDOUT, 'stdout'), (process.GetSTDERR, 'stderr')):
            text = getter(4096) if process else ''
            if text:
                send({'event': 'output', 'category': cat, 'text': text})
        if st == lldb.eStateRunning or st == lldb.eStateStepping:
            send({'event': 'running'})
        elif st == lldb.eStateStopped:
            send(stop_event())
        elif st in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateCrashed):
            send({'event': 'exited', 'exitCode': process.GetExitStatus() if st == lldb.eStateExited else None, 'normal': st == lldb.eStateExited})

def check(err):
    if err.Fail():
        raise Failure(err.GetCString() or 'LLDB reported an error')

def thread(a):
    t = process.GetThreadByIndexID(a.get('threadId') or 1)
    return t if t.IsValid() else process.GetThreadAtIndex(0)

def frame(a):
    return thread(a).GetFrameAtIndex(a.get('level') or 0)

def keep(v):
    name = 'v%d' % next_value[0]
    next_value[0] += 1
    values[name] = v
    return name

def var_object(v, expression):
    n = v.GetNumChildren()
    simple = not v.TypeIsPointerType() and n > 0
    value = v.GetValue()
    if value is None:
        value = v.GetSummary() or ('{...}' if simple else '')
    return {'name': keep(v), 'expression': expression, 'value': value, 'type': v.GetTypeName() or '', 'numChildren': n, 'dynamic': False}

def registers(f):
    out = []
    for s in f.GetRegisters():
        for r in s:
            out.append(r)
    return out

def reg_text(r):
    # LLDB's own text adds the symbol a value points at ("0x652 app.elf`main + 4"): the number alone.
    if r.GetByteSize() <= 8:
        return hx(r.GetValueAsUnsigned())
    return r.GetValue() or ''

def location_breakpoint(loc):
    k = loc['kind']
    if k == 'line':
        return target.BreakpointCreateByLocation(loc['path'], loc['line'])
    if k == 'address':
        return target.BreakpointCreateByAddress(int(loc['address'], 16))
    if loc.get('atEntry'):
        syms = target.FindFunctions(loc['name'])
        if syms.GetSize() == 0:
            raise Failure('No function named ' + loc['name'])
        sc = syms.GetContextAtIndex(0)
        start = (sc.GetFunction() if sc.GetFunction().IsValid() else sc.GetSymbol()).GetStartAddress()
        return target.BreakpointCreateBySBAddress(start)
    return target.BreakpointCreateByName(loc['name'])

def bp_info(bp):
    info = {'id': bp.GetID(), 'verified': bp.GetNumLocations() > 0, 'pending': bp.GetNumLocations() == 0}
    if bp.GetNumLocations() > 0:
        addr = bp.GetLocationAtIndex(0).GetAddress()
        info['address'] = hx(addr.GetLoadAddress(target))
        le = addr.GetLineEntry()
        if le.IsValid() and le.GetFileSpec().IsValid():
            info['file'] = str(le.GetFileSpec())
            info['line'] = le.GetLine()
    return info

def command_output(text):
    ro = lldb.SBCommandReturnObject()
    dbg.GetCommandInterpreter().HandleCommand(text, ro)
    if not ro.Succeeded():
        raise Failure((ro.GetError() or 'the command failed').strip())
    return (ro.GetOutput() or '') + (ro.GetError() or '')

def op(name, a):
    global target, process
    if name == 'loadProgram':
        err = lldb.SBError()
        target = dbg.CreateTarget(a['path'], a.get('triple'), None, True, err)
        check(err)
        return None
    if name == 'connectRemote':
        err = lldb.SBError()
        dbg.SetAsync(False)
        try:
            process = target.ConnectRemote(dbg.GetListener(), 'connect://' + a['address'], 'gdb-remote', err)
        finally:
            dbg.SetAsync(True)
        check(err)
        # The connection's own halt is queued as an event too: it is not a stop anyone should see.
        stale = lldb.SBEvent()
        while dbg.GetListener().GetNextEvent(stale):
            pass
        threading.Thread(target=listen, daemon=True).start()
        return frame_of(process.GetSelectedThread().GetFrameAtIndex(0))
    if name == 'command':
        return command_output(a['text'])
    if name == 'monitor':
        return command_output('process plugin packet monitor ' + a['text'])
    if name == 'flushCaches':
        # LLDB keeps the registers and frames of a stop until the next one, and its SB API has no call
        # to drop them: after a reset by a monitor command it would go on reading the old PC and
        # registers. Unloading the program's sections and loading them again at the same addresses
        # makes it flush every thread's registers and frames (Process::Flush), without running the
        # target; breakpoint sites are lifted and put back at the same addresses on the way.
        for m in target.module_iter():
            check(target.ClearModuleLoadAddress(m))
            check(target.SetModuleLoadAddress(m, 0))
        return None
    if name == 'continue':
        check(process.Continue())
        return None
    if name == 'interrupt':
        check(process.Stop())
        return None
    if name in ('stepOver', 'stepIn', 'stepOut'):
        t = thread(a)
        err = lldb.SBError()
        if name == 'stepOut':
            t.StepOut(err)
        elif a.get('instruction'):
            t.StepInstruction(name == 'stepOver', err)
        elif name == 'stepOver':
            t.StepOver(lldb.eOnlyDuringStepping, err)
        else:
            t.StepInto(None, lldb.LLDB_INVALID_LINE_NUMBER, err, lldb.eOnlyDuringStepping)
        check(err)
        return None
    if name == 'detach':
        check(process.Detach())
        return None
    if name == 'insertBreakpoint':
        bp = location_breakpoint(a['location'])
        if not bp.IsValid():
            raise Failure('LLDB could not set the breakpoint')
        if a.get('temporary'):
            bp.SetOneShot(True)
            if bp.GetNumLocations() > 0:
                one_shot[bp.GetID()] = bp.GetLocationAtIndex(0).GetAddress().GetLoadAddress(target)
        if a.get('condition'):
            bp.SetCondition(a['condition'])
        if a.get('ignoreCount'):
            bp.SetIgnoreCount(a['ignoreCount'])
        return bp_info(bp)
    if name == 'insertWatchpoint':
        v = frame(a).EvaluateExpression(a['expression'])
        err = lldb.SBError()
        wp = target.WatchAddress(v.GetLoadAddress(), v.GetByteSize(), a['access'] != 'write', a['access'] != 'read', err)
        check(err)
        if a.get('condition'):
            wp.SetCondition(a['condition'])
        return {'id': 1000000 + wp.GetID(), 'verified': True, 'pending': False}
    if name == 'deleteBreakpoints':
        for i in a['ids']:
            if i >= 1000000:
                target.DeleteWatchpoint(i - 1000000)
            else:
                one_shot.pop(i, None)
                target.BreakpointDelete(i)
        return None
    if name == 'threads':
        return [{'id': t.GetIndexID(), 'name': t.GetName() or ('Thread %d' % t.GetIndexID()), 'state': 'stopped'} for t in process]
    if name == 'stackDepth':
        return min(thread(a).GetNumFrames(), a.get('maxDepth') or 1000)
    if name == 'stackFrames':
        t = thread(a)
        return [frame_of(t.GetFrameAtIndex(i)) for i in range(a['low'], min(a['high'] + 1, t.GetNumFrames()))]
    if name == 'frameVariables':
        out = []
        for v in frame(a).GetVariables(True, True, False, True):
            aggregate = v.GetNumChildren() > 0 and not v.TypeIsPointerType()
            out.append({'name': v.GetName(), 'type': v.GetTypeName() or '', 'value': None if aggregate else v.GetValue()})
        return out
    if name == 'fileScopeVariables':
        out = []
        found = target.FindGlobalVariables('.', 100000, lldb.eMatchTypeRegex)
        for i in range(found.GetSize()):
            v = found.GetValueAtIndex(i)
            decl = v.GetDeclaration()
            fs = decl.GetFileSpec()
            if not fs.IsValid() or not fs.GetFilename():
                continue
            out.append({'name': v.GetName(), 'file': fs.GetFilename(), 'fullname': str(fs), 'line': decl.GetLine(), 'isStatic': v.GetValueType() == lldb.eValueTypeVariableStatic})
        return out
    if name == 'createVariable':
        f = frame(a)
        v = f.GetValueForVariablePath(a['expression'])
        if not v.IsValid() or v.GetError().Fail():
            v = f.EvaluateExpression(a['expression'])
        if v.GetError().Fail():
            raise Failure(v.GetError().GetCString())
        return var_object(v, a['expression'])
    if name == 'variableChildren':
        v = values.get(a['name'])
        if v is None:
            raise Failure('No variable object ' + a['name'])
        out = []
        for i in range(v.GetNumChildren()):
            c = v.GetChildAtIndex(i)
            name = c.GetName() or str(i)
            # Array elements: LLDB names them "[3]", the session brackets the index itself.
            out.append(var_object(c, name[1:-1] if name.startswith('[') and name.endswith(']') else name))
        return out
    if name == 'assignVariable':
        v = values.get(a['name'])
        err = lldb.SBError()
        if v is None or not v.SetValueFromCString(a['value'], err):
            raise Failure(err.GetCString() or 'The value could not be assigned')
        return v.GetValue() or ''
    if name == 'deleteVariable':
        values.pop(a['name'], None)
        return None
    if name == 'evaluate':
        f = frame(a)
        expr = a['expression']
        if expr.startswith('$') and '=' in expr and not expr.startswith('$$'):
            reg, value = expr[1:].split('=', 1)
            r = f.FindRegister(reg.strip())
            if r.IsValid():
                err = lldb.SBError()
                if not r.SetValueFromCString(value.strip(), err):
                    raise Failure(err.GetCString() or 'The register could not be written')
                return reg_text(r)
        if expr.startswith('$') and f.FindRegister(expr[1:]).IsValid():
            return reg_text(f.FindRegister(expr[1:]))
        v = f.EvaluateExpression(expr)
        if v.GetError().Fail():
            raise Failure(v.GetError().GetCString())
        return v.GetValue() if v.GetValue() is not None else (v.GetSummary() or '')
    if name == 'registerNames':
        return [r.GetName() for r in registers(process.GetSelectedThread().GetFrameAtIndex(0))]
    if name == 'registerValues':
        regs = registers(frame(a))
        wanted = a.get('numbers')
        idx = range(len(regs)) if wanted is None else [n for n in wanted if n < len(regs)]
        return [{'number': i, 'value': reg_text(regs[i])} for i in idx]
    if name == 'readRegister':
        r = process.GetSelectedThread().GetFrameAtIndex(0).FindRegister(a['name'])
        if not r.IsValid():
            raise Failure("The target has no register '" + a['name'] + "'.")
        return hx(r.GetValueAsUnsigned())
    if name == 'writeRegister':
        r = process.GetSelectedThread().GetFrameAtIndex(0).FindRegister(a['name'])
        err = lldb.SBError()
        if not r.IsValid() or not r.SetValueFromCString(a['value'], err):
            raise Failure(err.GetCString() or "The target has no register '" + a['name'] + "'.")
        return None
    if name == 'readMemory':
        err = lldb.SBError()
        data = process.ReadMemory(int(a['address'], 16), a['count'], err)
        check(err)
        return data.hex()
    if name == 'writeMemory':
        err = lldb.SBError()
        process.WriteMemory(int(a['address'], 16), bytes.fromhex(a['data']), err)
        check(err)
        return None
    if name == 'disassemble':
        start = int(a['start'], 16)
        err = lldb.SBError()
        data = process.ReadMemory(start, int(a['end'], 16) - start, err)
        check(err)
        out = []
        for i in target.GetInstructions(lldb.SBAddress(start, target), data):
            addr = i.GetAddress()
            load = addr.GetLoadAddress(target)
            fn = addr.GetFunction()
            fname = fn.GetName() if fn.IsValid() else (addr.GetSymbol().GetName() if addr.GetSymbol().IsValid() else None)
            fstart = (fn.GetStartAddress() if fn.IsValid() else addr.GetSymbol().GetStartAddress()) if fname else None
            le = addr.GetLineEntry()
            raw = data[load - start: load - start + i.GetByteSize()]
            ops = i.GetOperands(target)
            out.append({'address': hx(load), 'opcodes': raw.hex(), 'instruction': i.GetMnemonic(target) + ('\t' + ops if ops else ''),
                        'functionName': fname, 'offset': load - fstart.GetLoadAddress(target) if fstart else None,
                        'file': str(le.GetFileSpec()) if le.IsValid() and le.GetFileSpec().GetFilename() else None,
                        'line': le.GetLine() if le.IsValid() and le.GetLine() > 0 else None})
        return out
    if name == 'exit':
        if process is not None and process.IsValid():
            process.Kill() if a.get('kill') else None
        lldb.SBDebugger.Destroy(dbg)
        send({'id': a['_id'], 'ok': True, 'result': None})
        os._exit(0)
    raise Failure('Unknown bridge operation ' + name)

send({'event': 'ready', 'version': dbg.GetVersionString()})
for line in sys.stdin:
    try:
        req = json.loads(line)
    except ValueError:
        continue
    rid = req.get('id')
    req['_id'] = rid
    try:
        send({'id': rid, 'ok': True, 'result': op(req.get('op'), req)})
    except Failure as e:
        send({'id': rid, 'ok': False, 'error': str(e)})
    except Exception as e:
        send({'id': rid, 'ok': False, 'error': type(e).__name__ + ': ' + str(e)})
os._exit(0)
