/*
 * ldb_env.cc - a LevelDB environment whose table files are read with
 * pread(2) instead of being mapped, for rows_leveldb.c.
 *
 * LevelDB 1.23's own environment maps up to 1000 table files read-only
 * and reads them through the mappings.  Every page a long listing or a
 * big read touches then stays in the process's resident set while the
 * table is open: 140 MiB of a keytreefs daemon's 177 MiB listing 10^6
 * entries (docs/PERFORMANCE.md).  Those pages are the kernel's page
 * cache, shared and reclaimable, but `top` counts them, and a user reads
 * RES there.  Read with pread, a block lands in LevelDB's block cache,
 * which kt_options.cache_size bounds, and the page cache keeps the rest
 * outside the process.
 *
 * LevelDB's C API has no way to build an environment, only to pass one:
 * leveldb_env_t is a struct private to its c.cc whose first member is
 * the Env pointer.  kt__ldb_pread_env() takes the default environment's
 * struct, checks that its first member is indeed Env::Default(), and only
 * then points it at the wrapper; if the check fails (another LevelDB
 * build), it answers NULL and the store keeps LevelDB's mappings.
 *
 * Open table files keep their descriptor while the process has fewer
 * than a fifth of its descriptor limit in such use (the share LevelDB's
 * own reader takes); past that a file opens and closes its descriptor on
 * each read.  Every open and read of a table file is counted on the
 * thread that makes it (kt__ldb_table_calls, rows.h).
 *
 * Every block read from a table file is checked here, against the
 * CRC-32C in its trailer, with the CPU's crc32 instruction where there is
 * one (crc32c.c).  LevelDB as Debian builds it checks with a table, at
 * about 3.7 instructions a byte: a quarter of a long listing's work when
 * its blocks are not compressed.  So keytree's reads through this
 * environment leave LevelDB's own check off (rows_leveldb.c), and a
 * damaged block fails here instead, as a "Corruption" status, the same
 * way LevelDB's check would fail it.  LevelDB reads a table file in two
 * shapes only (table/format.cc, table/table.cc): a block with its 5-byte
 * trailer (a type byte, then the masked CRC of the block and the type),
 * and the 48-byte footer that ends the file, which has no CRC of its own
 * and is told by the magic number it ends with.  This is the only C++ in
 * the library.
 */
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <leveldb/c.h>
#include <leveldb/env.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

extern "C" uint32_t kt__crc32c(uint32_t crc, const void *p, size_t n);

namespace {

std::atomic<long> fds_left{-1};

/* LevelDB's table format (table/format.h): the footer's length and the
 * magic number that ends it, and a block's trailer, a type byte and a
 * masked CRC-32C of block and type. */
const size_t footer_len = 48;
const unsigned char footer_magic[8] = {0x57, 0xfb, 0x80, 0x8b,
				       0x24, 0x75, 0x47, 0xdb};
const size_t trailer_len = 5;
const uint32_t mask_delta = 0xa282ead8u;

uint32_t get32le(const char *p)
{
	const unsigned char *u = reinterpret_cast<const unsigned char *>(p);

	return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
	       (uint32_t)u[3] << 24;
}

/* Is the read p[0..n) the footer?  It is read at the size the MANIFEST
 * gives the table, which a file longer on disk (damaged, or padded by a
 * copy) does not match, so it is told by its magic number; a block whose
 * trailer ended in those 8 bytes has a chance of 2^-64. */
bool is_footer(const char *p, size_t n)
{
	return n == footer_len &&
	       std::memcmp(p + n - sizeof(footer_magic), footer_magic,
			   sizeof(footer_magic)) == 0;
}

/* Does the block read at p[0..n), trailer included, match its CRC? */
bool block_ok(const char *p, size_t n)
{
	uint32_t rot = get32le(p + n - 4) - mask_delta;
	uint32_t want = (rot >> 17) | (rot << 15);

	return kt__crc32c(0, p, n - 4) == want;
}

/* Opens and reads of table files made by this thread, and the thread's
 * number, never reused (a thread that ends leaves its storage to the next
 * one made): kt__ldb_table_calls. */
std::atomic<unsigned long long> threads_seen{0};
thread_local unsigned long long table_thread = 0;
thread_local unsigned long long table_calls = 0;
/* Set around a read whose caller checks the rows itself
 * (kt__ldb_skip_checks): value blocks with their own CRC-32C. */
thread_local bool skip_checks = false;

void table_call()
{
	if (table_thread == 0)
		table_thread = ++threads_seen;
	table_calls++;
}

leveldb::Status io_error(const std::string &name, int err)
{
	if (err == ENOENT)
		return leveldb::Status::NotFound(name, std::strerror(err));
	return leveldb::Status::IOError(name, std::strerror(err));
}

/* Take one of the descriptors a table may keep; false when none is left. */
bool fd_take()
{
	long n = fds_left.load();

	if (n < 0) {
		struct rlimit rl;
		long want = 50;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			if (rl.rlim_cur == RLIM_INFINITY)
				want = 1L << 20;
			else
				want = (long)(rl.rlim_cur / 5);
		}
		long unset = -1;
		fds_left.compare_exchange_strong(unset, want);
	}
	n = fds_left.load();
	while (n > 0 && !fds_left.compare_exchange_weak(n, n - 1)) {
	}
	return n > 0;
}

class PreadFile : public leveldb::RandomAccessFile {
public:
	PreadFile(std::string name, int fd) : name_(std::move(name)), fd_(fd)
	{
	}

	~PreadFile() override
	{
		if (fd_ >= 0) {
			::close(fd_);
			fds_left.fetch_add(1);
		}
	}

	leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice *result,
			     char *scratch) const override
	{
		int fd = fd_;
		ssize_t got;
		int err = 0;

		table_call();

		if (fd < 0 && (fd = ::open(name_.c_str(),
					   O_RDONLY | O_CLOEXEC)) < 0) {
			*result = leveldb::Slice(scratch, 0);
			return io_error(name_, errno);
		}
		do {
			got = ::pread(fd, scratch, n, (off_t)offset);
		} while (got < 0 && errno == EINTR);
		if (got < 0)
			err = errno;
		if (fd != fd_)
			::close(fd);
		*result = leveldb::Slice(scratch, got < 0 ? 0 : (size_t)got);
		if (got < 0)
			return io_error(name_, err);
		/* A short read is LevelDB's to report ("truncated block
		 * read"); the footer has no CRC. */
		if (!skip_checks && (size_t)got == n && n >= trailer_len &&
		    !is_footer(scratch, n) &&
		    !block_ok(scratch, n))
			return leveldb::Status::Corruption(
				name_, "block checksum mismatch");
		return leveldb::Status::OK();
	}

private:
	const std::string name_;
	const int fd_; /* -1: opened for each read */
};

class PreadEnv : public leveldb::EnvWrapper {
public:
	explicit PreadEnv(leveldb::Env *base) : leveldb::EnvWrapper(base)
	{
	}

	leveldb::Status
	NewRandomAccessFile(const std::string &name,
			    leveldb::RandomAccessFile **out) override
	{
		int fd;

		table_call();
		fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
		*out = nullptr;
		if (fd < 0)
			return io_error(name, errno);
		if (!fd_take()) {
			::close(fd);
			fd = -1;
		}
		*out = new (std::nothrow) PreadFile(name, fd);
		if (*out == nullptr) {
			if (fd >= 0) {
				::close(fd);
				fds_left.fetch_add(1);
			}
			return leveldb::Status::IOError(name, "out of memory");
		}
		return leveldb::Status::OK();
	}
};

} // namespace

extern "C" __attribute__((visibility("hidden"))) void
kt__ldb_table_calls(unsigned long long *thread, unsigned long long *calls)
{
	if (table_thread == 0)
		table_thread = ++threads_seen;
	*thread = table_thread;
	*calls = table_calls;
}

extern "C" __attribute__((visibility("hidden"))) void
kt__ldb_skip_checks(int skip)
{
	skip_checks = skip != 0;
}

/* The struct LevelDB's c.cc keeps behind leveldb_env_t; only its first
 * member is used here, and checked before it is. */
struct kt_ldb_env_layout {
	leveldb::Env *rep;
};

extern "C" __attribute__((visibility("hidden"))) leveldb_env_t *
kt__ldb_pread_env(void)
{
	/* One wrapper for the process, like LevelDB's default environment,
	 * whose background thread it shares; never freed. */
	static PreadEnv *env = new (std::nothrow) PreadEnv(leveldb::Env::Default());
	leveldb_env_t *e;
	kt_ldb_env_layout *l;

	if (env == nullptr || (e = leveldb_create_default_env()) == nullptr)
		return nullptr;
	l = reinterpret_cast<kt_ldb_env_layout *>(e);
	if (l->rep != leveldb::Env::Default()) {
		leveldb_env_destroy(e);
		return nullptr;
	}
	/* leveldb_env_destroy() leaves a default environment's Env alone,
	 * so it never deletes the wrapper either. */
	l->rep = env;
	return e;
}
