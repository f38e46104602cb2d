package sqlite

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// walVFS is SQLite's default VFS with one change: a commit's WAL frames
// reach the file in one write instead of two per frame (its 24-byte header,
// then its page), about 190 pwrite system calls for a group commit of 95
// frames, which the single writer made while every request waited on it.
//
// The WAL file's writes that append (each at the end of the one before) are
// gathered in a buffer, and written out:
//   - once the commit frame's page is appended (the frame whose header
//     carries the database size): SQLite publishes a commit in the
//     wal-index only after its frames are written, so nothing another
//     connection or process can read is ever in the buffer, and a failed
//     write fails the commit as before;
//   - before any other operation on the file (a read, sync, truncate, size,
//     close, file control) and before a write elsewhere in the file (the
//     checksum rewrites and in-place page rewrites of a transaction, a WAL
//     restart), so the file sees the same writes in the same order.
//
// Durability is unchanged: the data reach the operating system before the
// commit returns, as they did, and synchronous=FULL syncs after the flush.
const walVFSName = "parley-wal"

// walBufferMax bounds one WAL file's buffer; a transaction larger than
// that is written in pieces of about this size.
const walBufferMax = 4 << 20

// walWriteMax is the most one write passes to the base VFS: SQLite's unix
// VFS writes at most 128 KB at once (it masks the size with 0x1ffff).
const walWriteMax = 124 << 10

// walFrameHeader is the size of a WAL frame's header; its bytes 4 to 7 hold
// the database size in pages after a commit, 0 in other frames.
const walFrameHeader = 24

type (
	vfsOpenFunc   = func(tls *libc.TLS, vfs, name, file uintptr, flags int32, outFlags uintptr) int32
	fileCloseFunc = func(tls *libc.TLS, file uintptr) int32
	fileIOFunc    = func(tls *libc.TLS, file, buf uintptr, n int32, off int64) int32
	fileTruncFunc = func(tls *libc.TLS, file uintptr, size int64) int32
	fileSyncFunc  = func(tls *libc.TLS, file uintptr, flags int32) int32
	fileSizeFunc  = func(tls *libc.TLS, file, size uintptr) int32
	fileCtlFunc   = func(tls *libc.TLS, file uintptr, op int32, arg uintptr) int32
)

var (
	walVFSOnce sync.Once
	walVFSErr  error
	// baseVFS is the default VFS walVFS wraps; walVFSStruct is walVFS,
	// kept here so that SQLite's pointer to it stays valid.
	baseVFS      *sqlite3.Tsqlite3_vfs
	walVFSStruct sqlite3.Tsqlite3_vfs

	// walFiles are the open WAL files, by their sqlite3_file's address.
	walFiles sync.Map // uintptr -> *walFile
	// walMethodTables are the WAL files' methods: the base file's, with
	// the ones below in place, per base methods table (one, in practice).
	// They are package variables, outside Go's heap, as SQLite's code
	// turns their address, a uintptr, back into a pointer.
	walMethodsMu    sync.Mutex
	walMethodTables [4]sqlite3.Tsqlite3_io_methods
	walMethodsBase  [4]uintptr
	walMethodsUsed  int

	// walBuffers lends buffers to the writing connection: one transaction
	// writes at a time, so one or two buffers serve the process.
	walBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512<<10); return &b }}
)

// registerWALVFS registers walVFS once per process.
func registerWALVFS() error {
	walVFSOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		base := sqlite3.Xsqlite3_vfs_find(tls, 0)
		if base == 0 {
			walVFSErr = fmt.Errorf("sqlite: no default VFS")
			return
		}
		baseVFS = (*sqlite3.Tsqlite3_vfs)(cPointer(base))
		name, err := libc.CString(walVFSName)
		if err != nil {
			walVFSErr = err
			return
		}
		walVFSStruct = *baseVFS
		walVFSStruct.FpNext = 0
		walVFSStruct.FzName = name
		walVFSStruct.FxOpen = funcPointer(walVFSOpen)
		if rc := sqlite3.Xsqlite3_vfs_register(tls, uintptr(unsafe.Pointer(&walVFSStruct)), 0); rc != sqlite3.SQLITE_OK {
			walVFSErr = fmt.Errorf("sqlite: register VFS %s: code %d", walVFSName, rc)
		}
	})
	return walVFSErr
}

// funcPointer is what SQLite's transpiled code stores as a C function
// pointer: the Go func value's word (as modernc's own VFS does).
func funcPointer(f any) uintptr {
	type iface [2]uintptr
	return (*iface)(unsafe.Pointer(&f))[1]
}

// cPointer is a C pointer SQLite handed over as a uintptr (memory of
// modernc's C heap, which Go's collector neither moves nor frees).
func cPointer(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// call turns a C function pointer back into the Go func it holds.
func call[F any](p uintptr) F { return *(*F)(unsafe.Pointer(&p)) }

// walFile is a WAL file's state beside SQLite's sqlite3_file.
type walFile struct {
	base    *sqlite3.Tsqlite3_io_methods
	buf     *[]byte // lent by walBuffers while it holds data
	bufAt   int64   // the file offset of the buffer's first byte
	end     int64   // where the last write ended: an append starts there
	commits bool    // the last write was a commit frame's header
}

func walVFSOpen(tls *libc.TLS, vfs, name, file uintptr, flags int32, outFlags uintptr) int32 {
	rc := call[vfsOpenFunc](baseVFS.FxOpen)(tls, uintptr(unsafe.Pointer(baseVFS)), name, file, flags, outFlags)
	f := (*sqlite3.Tsqlite3_file)(cPointer(file))
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_WAL == 0 || f.FpMethods == 0 {
		return rc
	}
	methods := walMethodsOver(f.FpMethods)
	if methods == 0 {
		return rc
	}
	walFiles.Store(file, &walFile{base: (*sqlite3.Tsqlite3_io_methods)(cPointer(f.FpMethods)), end: -1})
	f.FpMethods = methods
	return rc
}

// walMethodsOver gives the methods table of WAL files whose base file has
// the table at base, or 0 when the tables are all taken (the file then
// keeps its base methods).
func walMethodsOver(base uintptr) uintptr {
	walMethodsMu.Lock()
	defer walMethodsMu.Unlock()
	for i := range walMethodsUsed {
		if walMethodsBase[i] == base {
			return uintptr(unsafe.Pointer(&walMethodTables[i]))
		}
	}
	if walMethodsUsed == len(walMethodTables) {
		return 0
	}
	m := &walMethodTables[walMethodsUsed]
	*m = *(*sqlite3.Tsqlite3_io_methods)(cPointer(base))
	m.FxClose = funcPointer(walClose)
	m.FxRead = funcPointer(walRead)
	m.FxWrite = funcPointer(walWrite)
	m.FxTruncate = funcPointer(walTruncate)
	m.FxSync = funcPointer(walSync)
	m.FxFileSize = funcPointer(walFileSize)
	m.FxFileControl = funcPointer(walFileControl)
	walMethodsBase[walMethodsUsed] = base
	walMethodsUsed++
	return uintptr(unsafe.Pointer(m))
}

func walFileAt(file uintptr) *walFile {
	w, _ := walFiles.Load(file)
	return w.(*walFile)
}

// flush writes the buffer out and gives it back.
func (w *walFile) flush(tls *libc.TLS, file uintptr) int32 {
	if w.buf == nil {
		return sqlite3.SQLITE_OK
	}
	b := *w.buf
	write := call[fileIOFunc](w.base.FxWrite)
	rc := int32(sqlite3.SQLITE_OK)
	for at := 0; at < len(b) && rc == sqlite3.SQLITE_OK; at += walWriteMax {
		n := min(len(b)-at, walWriteMax)
		rc = write(tls, file, uintptr(unsafe.Pointer(&b[at])), int32(n), w.bufAt+int64(at))
	}
	*w.buf = b[:0]
	walBuffers.Put(w.buf)
	w.buf = nil
	return rc
}

func walWrite(tls *libc.TLS, file, data uintptr, n int32, off int64) int32 {
	w := walFileAt(file)
	p := unsafe.Slice((*byte)(cPointer(data)), int(n))
	// The page after a commit frame's header ends the transaction's frames.
	ends := w.commits
	w.commits = n == walFrameHeader && binary.BigEndian.Uint32(p[4:8]) != 0
	appends := off == w.end && int(n) < walBufferMax
	if w.buf != nil && (!appends || len(*w.buf)+int(n) > walBufferMax) {
		if rc := w.flush(tls, file); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	w.end = off + int64(n)
	if !appends {
		return call[fileIOFunc](w.base.FxWrite)(tls, file, data, n, off)
	}
	if w.buf == nil {
		w.buf = walBuffers.Get().(*[]byte)
		w.bufAt = off
	}
	*w.buf = append(*w.buf, p...)
	if ends {
		return w.flush(tls, file)
	}
	return sqlite3.SQLITE_OK
}

func walRead(tls *libc.TLS, file, buf uintptr, n int32, off int64) int32 {
	w := walFileAt(file)
	if rc := w.flush(tls, file); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[fileIOFunc](w.base.FxRead)(tls, file, buf, n, off)
}

func walTruncate(tls *libc.TLS, file uintptr, size int64) int32 {
	w := walFileAt(file)
	if rc := w.flush(tls, file); rc != sqlite3.SQLITE_OK {
		return rc
	}
	w.end = -1
	return call[fileTruncFunc](w.base.FxTruncate)(tls, file, size)
}

func walSync(tls *libc.TLS, file uintptr, flags int32) int32 {
	w := walFileAt(file)
	if rc := w.flush(tls, file); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[fileSyncFunc](w.base.FxSync)(tls, file, flags)
}

func walFileSize(tls *libc.TLS, file, size uintptr) int32 {
	w := walFileAt(file)
	if rc := w.flush(tls, file); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[fileSizeFunc](w.base.FxFileSize)(tls, file, size)
}

func walFileControl(tls *libc.TLS, file uintptr, op int32, arg uintptr) int32 {
	w := walFileAt(file)
	if rc := w.flush(tls, file); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[fileCtlFunc](w.base.FxFileControl)(tls, file, op, arg)
}

// walClose writes what is left, then closes the base file. SQLite ignores
// a close's result, so a failed write here loses only frames of a
// transaction that never committed (a commit's frames are written before
// the commit returns).
func walClose(tls *libc.TLS, file uintptr) int32 {
	w := walFileAt(file)
	w.flush(tls, file)
	walFiles.Delete(file)
	return call[fileCloseFunc](w.base.FxClose)(tls, file)
}
