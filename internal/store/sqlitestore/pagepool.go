package sqlitestore

import (
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// The page caches' sizes, in KiB (open says why each is what it is).
const (
	writeCacheKiB      = 16384
	readCacheKiB       = 2048
	checkpointCacheKiB = 256
)

// cacheSize is the DSN parameter that gives a connection a page cache of
// kib KiB (a negative cache_size is in KiB, a positive one in pages).
func cacheSize(kib int) string {
	return "&_pragma=cache_size(-" + strconv.Itoa(kib) + ")"
}

// pageSize is the databases' page size (SQLite's default, never changed).
const pageSize = 4096

// poolCacheKiB is how much of the caches the page pool holds: the write
// connection's, two readers' (under writes a reader holds one query's pages
// at a time: its cache is emptied at every read after a commit) and the
// checkpointer's. A page beyond the pool is allocated one by one, as before.
const poolCacheKiB = writeCacheKiB + 2*readCacheKiB + checkpointCacheKiB

// pagePool is SQLite's page-cache memory for the whole process
// (SQLITE_CONFIG_PAGECACHE), one allocation made before SQLite starts.
//
// Without it, each cached page (4 KiB of content and ~300 bytes of
// headers) is a malloc of its own, and modernc's allocator rounds every
// allocation up to a power of two: 8 KiB a page. With the write
// connection's 16 MiB cache full, SQLite's allocations had 40.9 MB mapped
// and ~33 MB resident (docs/benchmarks.md, "nineteenth round"), filling
// while load ran and creeping for minutes after, as slots were touched for
// the first time. Pooled, a page takes its size, and the pool's memory is
// taken (and touched: SQLite threads its free list through every slot)
// when the first store opens, so it is flat from then on: a freshly
// started server holds ~16 MiB more, one under load ~9 MiB less.
var pagePool struct {
	once  sync.Once
	err   error
	slots int // the pool's pages
	size  int // each slot's bytes
}

// setupPagePool gives SQLite its page pool, once per process. It must run
// before SQLite's first connection: after that SQLite refuses the setting
// (SQLITE_MISUSE), and the caches go on allocating page by page, which
// costs memory, not correctness; pagePool.err then says why.
func setupPagePool() {
	pagePool.once.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		// The headers a pooled page needs beyond its content, as this
		// build of SQLite lays them out.
		hdr := tls.Alloc(8)
		defer tls.Free(8)
		hdrSize := (*int32)(unsafe.Add(nil, hdr)) // SQLite's memory, off Go's heap
		*hdrSize = 0
		va := libc.NewVaList(hdr)
		defer libc.Xfree(tls, va)
		if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_PCACHE_HDRSZ, va); rc != sqlite3.SQLITE_OK {
			pagePool.err = fmt.Errorf("sqlitestore: page pool: header size: SQLite error %d", rc)
			return
		}
		size := (pageSize + int(*hdrSize) + 7) &^ 7
		slots := poolCacheKiB * 1024 / pageSize
		buf := libc.Xmalloc(tls, types.Size_t(size*slots))
		if buf == 0 {
			pagePool.err = fmt.Errorf("sqlitestore: page pool: out of memory for %d pages", slots)
			return
		}
		args := libc.NewVaList(buf, int32(size), int32(slots))
		defer libc.Xfree(tls, args)
		if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_PAGECACHE, args); rc != sqlite3.SQLITE_OK {
			libc.Xfree(tls, buf)
			pagePool.err = fmt.Errorf("sqlitestore: page pool: SQLite error %d (SQLite had started)", rc)
			return
		}
		pagePool.slots, pagePool.size = slots, size
	})
}
