// ceiling_bench: what this machine can do at best on the paths a cairn write takes, measured
// in the same run as the benchmarks so that scripts/bench.sh can report each of our figures
// as a share of its ceiling (absolute numbers on a shared machine drift; ratios much less).
//   storage  WriteBatch commits on a fresh storage::Engine (our RocksDB options: shared
//            memtable budget and cache, bloom filters, insert hints, WAL on, no fsync). Each
//            record is what an API write puts: the record, one index entry and a change-log
//            entry. 100-record batches from 8 threads; single-record batches from 32 threads.
//            No reads, no catalog, no JSON: our storage layer's upper bound.
//   grpc     ChangeBatch messages of 1000 entries (the benchmark's record bodies) on a
//            loopback gRPC stream shaped like the peer Link (sync API, at most 8 batches
//            unacknowledged, an Ack per batch), with nothing behind either end; with 1 stream
//            and with 2 at once (a 3-node cluster's origin sends to two peers).
//   http     cairnd's HTTP server (node::HttpServer, Boost.Beast, the node's default threads)
//            with a handler that parses the JSON body and answers: single-record upsert
//            bodies from 32 keep-alive clients. The round-trip bound of single upserts. Also
//            measured the same way: cpp-httplib configured as cairnd used it before issue 18
//            (tcp_nodelay, keep-alive, a 64-thread pool), for comparison.
// Prints a table and JSON (--json FILE).
//
//   ceiling_bench [--seconds 3] [--json FILE]

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cairn/bench/v1/ceiling.grpc.pb.h"
#include "cairn/storage/v1/records.pb.h"
#include "cluster-tests/bench/bench_util.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "node/config.h"
#include "node/http_server.h"
#include "node/metrics.h"
#include "rocksdb/write_batch.h"
#include "storage/engine.h"

namespace {

using cairn::bench::BenchRecord;
using cairn::bench::Die;
using cairn::peer::v1::LinkMessage;
using nlohmann::json;

constexpr uint64_t kWindow = 8;      // as replication/link_session.h
constexpr int kBatchEntries = 1000;  // StreamLimits::max_entries

std::string BigEndian(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<char>(v & 0xFF);
  return out;
}

// Runs `threads` copies of `work(thread, stop)` for `seconds` after a short warm-up; `work`
// returns the records it committed since its last return. Records/s of the measured part.
template <typename Work>
double Measure(int threads, double seconds, Work work) {
  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<uint64_t> records{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t n = work(t);
        if (measuring.load(std::memory_order_relaxed)) records += n;
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(300));  // warm-up: memtables, connections
  measuring = true;
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Seconds(seconds));
  const uint64_t done = records.load();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  stop = true;
  for (auto& t : pool) t.join();
  return done / elapsed;
}

// ---- storage

double StorageCeiling(const std::string& dir, int per_batch, int threads, double seconds) {
  std::filesystem::remove_all(dir);
  cairn::storage::EngineOptions options;
  options.path = dir;
  auto opened = cairn::storage::Engine::Open(options);
  if (!opened.ok()) Die("opening the storage ceiling's engine: " + opened.status().ToString());
  cairn::storage::Engine* engine = opened->get();
  using cairn::storage::Cf;
  std::atomic<uint64_t> seq{0};
  std::vector<uint64_t> next(threads, 0);
  const std::string table_prefix = BigEndian(42);  // a table generation's key prefix
  const double rps = Measure(threads, seconds, [&](int t) -> uint64_t {
    rocksdb::WriteBatch batch;
    for (int i = 0; i < per_batch; ++i) {
      const uint64_t id = (static_cast<uint64_t>(t) << 40) | next[t]++;
      const std::string key = table_prefix + BigEndian(id);
      batch.Put(engine->cf(Cf::kRecords), key, BenchRecord(id).dump()).PermitUncheckedError();
      batch.Put(engine->cf(Cf::kIndexes), absl::StrCat(table_prefix, "c", id % 1000, "/", key), "")
          .PermitUncheckedError();
      cairn::storage::v1::ChangeEntry entry;
      entry.set_table("throughput");
      entry.set_key(key);
      entry.set_version(id);
      entry.set_origin("n1");
      entry.set_row_generation(1);
      entry.set_logged_ms(1'700'000'000'000);
      batch.Put(engine->cf(Cf::kChangeLog), BigEndian(++seq), entry.SerializeAsString())
          .PermitUncheckedError();
    }
    if (absl::Status s = engine->Write(&batch); !s.ok()) Die("storage ceiling: " + s.ToString());
    return per_batch;
  });
  opened->reset();
  std::filesystem::remove_all(dir);
  return rps;
}

// RocksDB alone reading `rows` records back in key order with an iterator (after a flush, so
// from SST files through the block cache): the floor under a verify's digest scan (R18).
double ScanCeiling(const std::string& dir, uint64_t rows) {
  std::filesystem::remove_all(dir);
  cairn::storage::EngineOptions options;
  options.path = dir;
  auto opened = cairn::storage::Engine::Open(options);
  if (!opened.ok()) Die("opening the scan ceiling's engine: " + opened.status().ToString());
  cairn::storage::Engine* engine = opened->get();
  using cairn::storage::Cf;
  const std::string table_prefix = BigEndian(42);
  for (uint64_t id = 0; id < rows;) {
    rocksdb::WriteBatch batch;
    for (int i = 0; i < 1000 && id < rows; ++i, ++id) {
      batch.Put(engine->cf(Cf::kRecords), table_prefix + BigEndian(id), BenchRecord(id).dump())
          .PermitUncheckedError();
    }
    if (absl::Status s = engine->Write(&batch); !s.ok()) Die("scan ceiling: " + s.ToString());
  }
  if (absl::Status s = engine->Flush(); !s.ok()) Die("scan ceiling: " + s.ToString());
  const absl::Time start = absl::Now();
  uint64_t seen = 0, bytes = 0;
  auto it = engine->NewIterator(Cf::kRecords);
  for (it->Seek(table_prefix); it->Valid(); it->Next()) {
    ++seen;
    bytes += it->value().size();
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (seen != rows || bytes == 0) Die("scan ceiling: read back fewer rows than written");
  it.reset();
  opened->reset();
  std::filesystem::remove_all(dir);
  return static_cast<double>(rows) / seconds;
}

// ---- gRPC

class CeilingService final : public cairn::bench::v1::StreamCeiling::Service {
  grpc::Status Stream(grpc::ServerContext*,
                      grpc::ServerReaderWriter<LinkMessage, LinkMessage>* stream) override {
    LinkMessage in, ack;
    while (stream->Read(&in)) {
      ack.mutable_ack()->set_batch_no(in.change_batch().batch_no());
      if (!stream->Write(ack)) break;
    }
    return grpc::Status::OK;
  }
};

struct GrpcResult {
  double records_per_s = 0;  // delivered, all streams together
  double mb_per_s = 0;
};

// `streams` client streams at once, each sending as fast as its window allows.
GrpcResult GrpcCeiling(int streams, double seconds) {
  CeilingService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(256 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) Die("the gRPC ceiling's server did not start");

  LinkMessage batch;
  {
    cairn::peer::v1::ChangeBatch* b = batch.mutable_change_batch();
    b->set_database("bench");
    for (int i = 0; i < kBatchEntries; ++i) {
      cairn::storage::v1::ChangeEntry* e = b->add_entries();
      e->set_table("throughput");
      e->set_op(cairn::storage::v1::PUT);
      e->set_key(BigEndian(i));
      e->set_version(1'700'000'000'000'000 + i);
      e->set_origin("n1");
      e->set_row_generation(1);
      e->set_json(BenchRecord(i).dump());
      e->set_logged_ms(1'700'000'000'000);
    }
  }
  const double batch_bytes = static_cast<double>(batch.ByteSizeLong());

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection per channel, as per peer
  struct Stream {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<cairn::bench::v1::StreamCeiling::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<LinkMessage, LinkMessage>> rw;
    std::atomic<uint64_t> acked{0};
    std::thread reader;
    LinkMessage out;  // the writer's own copy of the batch
  };
  std::vector<std::unique_ptr<Stream>> open;
  for (int s = 0; s < streams; ++s) {
    auto st = std::make_unique<Stream>();
    st->channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                            grpc::InsecureChannelCredentials(), args);
    st->stub = cairn::bench::v1::StreamCeiling::NewStub(st->channel);
    st->rw = st->stub->Stream(&st->context);
    st->out = batch;
    Stream* raw = st.get();
    st->reader = std::thread([raw] {
      LinkMessage ack;
      while (raw->rw->Read(&ack)) raw->acked = ack.ack().batch_no();
    });
    open.push_back(std::move(st));
  }
  std::vector<uint64_t> sent(streams, 0);
  const double rps = Measure(streams, seconds, [&](int s) -> uint64_t {
    Stream& st = *open[s];
    // The sender's window: at most kWindow batches unacknowledged (a spin on the ack counter
    // stands for the link's condition variable; it costs the ceiling, not us).
    while (sent[s] - st.acked.load() >= kWindow) std::this_thread::yield();
    st.out.mutable_change_batch()->set_batch_no(++sent[s]);
    if (!st.rw->Write(st.out)) Die("the gRPC ceiling's stream broke");
    return kBatchEntries;
  });
  for (auto& st : open) {
    st->rw->WritesDone();
    st->reader.join();
    st->rw->Finish().IgnoreError();  // why ignored: the measurement is over
  }
  server->Shutdown();
  return {rps, rps / kBatchEntries * batch_bytes / 1e6};
}

// ---- HTTP

// The handler both servers run: parse the body, answer as an upsert does.
std::string UpsertAnswer(absl::string_view request) {
  json body = json::parse(request, nullptr, /*allow_exceptions=*/false);
  return json{{"message", "upserted 1 of 1 records"},
              {"upserted_hashes", {body["records"][0]["id"]}}}
      .dump();
}

// Single-record upserts from `clients` keep-alive clients to 127.0.0.1:`port`.
double HttpLoad(int port, int clients, double seconds) {
  std::vector<std::unique_ptr<httplib::Client>> conns;
  for (int c = 0; c < clients; ++c) {
    conns.push_back(std::make_unique<httplib::Client>("127.0.0.1", port));
    conns.back()->set_keep_alive(true);
    conns.back()->set_tcp_nodelay(true);
  }
  std::vector<uint64_t> next(clients, 0);
  return Measure(clients, seconds, [&](int c) -> uint64_t {
    const uint64_t id = (static_cast<uint64_t>(c) << 40) | next[c]++;
    const std::string body = json{
        {"operation", "upsert"},
        {"database", "bench"},
        {"table", "upsert_32"},
        {"records",
         {BenchRecord(id)}}}.dump();
    auto res = conns[c]->Post("/", body, "application/json");
    return res && res->status == 200 ? 1 : 0;
  });
}

double HttpCeiling(int clients, double seconds) {
  cairn::node::Metrics metrics;
  cairn::node::NodeConfig defaults;
  cairn::node::HttpServerOptions options;
  options.listen = {"127.0.0.1", 0};
  options.worker_threads = cairn::node::HttpThreadsFor(defaults);
  options.io_threads = cairn::node::HttpIoThreadsFor(defaults);
  cairn::node::HttpServer server(
      [](absl::string_view body, const cairn::node::Caller&, cairn::Deadline*) {
        cairn::node::Reply reply;
        reply.body = UpsertAnswer(body);
        return reply;
      },
      &metrics, options);
  auto bound = server.Start();
  if (!bound.ok()) Die("the HTTP ceiling's server did not start: " + bound.status().ToString());
  const double rps = HttpLoad(bound->port, clients, seconds);
  server.Stop();
  return rps;
}

double HttplibCeiling(int clients, double seconds) {
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(64); };  // HttpThreadsFor
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(1'000'000);
  server.Post("/", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(UpsertAnswer(req.body), "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0) Die("the HTTP ceiling's server did not bind");
  std::thread listener([&] { server.listen_after_bind(); });
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!server.is_running()) {
    if (absl::Now() > deadline) Die("the HTTP ceiling's server did not start");
    absl::SleepFor(absl::Milliseconds(1));  // polling for the listener thread
  }
  const double rps = HttpLoad(port, clients, seconds);
  server.stop();
  listener.join();
  return rps;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, dir = std::filesystem::temp_directory_path() / "cairn-ceiling";
  double seconds = 3;
  CLI::App app("ceiling_bench: this machine's RocksDB, gRPC and HTTP ceilings", "ceiling_bench");
  app.add_option("--seconds", seconds, "measured seconds per ceiling")->capture_default_str();
  app.add_option("--dir", dir, "scratch directory for the storage ceiling")->capture_default_str();
  app.add_option("--json", json_path, "write the results as JSON here");
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  const double storage_batch = StorageCeiling(dir, 100, 8, seconds);
  std::fprintf(stderr, "storage, 100-record batches, 8 threads: %.0f records/s\n", storage_batch);
  const double storage_single = StorageCeiling(dir, 1, 32, seconds);
  std::fprintf(stderr, "storage, single records, 32 threads: %.0f records/s\n", storage_single);
  const double scan = ScanCeiling(dir, seconds >= 1 ? 1'000'000 : 20'000);
  std::fprintf(stderr, "storage, iterator over records: %.0f rows/s\n", scan);
  const GrpcResult grpc1 = GrpcCeiling(1, seconds);
  std::fprintf(stderr, "gRPC, 1 stream: %.0f records/s\n", grpc1.records_per_s);
  const GrpcResult grpc2 = GrpcCeiling(2, seconds);
  std::fprintf(stderr, "gRPC, 2 streams: %.0f records/s\n", grpc2.records_per_s);
  const double http = HttpCeiling(32, seconds);
  std::fprintf(stderr, "HTTP, 32 clients: %.0f requests/s\n", http);
  const double httplib = HttplibCeiling(32, seconds);
  std::fprintf(stderr, "cpp-httplib, 32 clients: %.0f requests/s\n", httplib);

  json out = {
      {"benchmark", "ceiling_bench"},
      {"machine", machine},
      {"seconds_per_run", seconds},
      {"storage",
       {{"batch100_records_per_s", storage_batch},
        {"single_records_per_s", storage_single},
        {"scan_rows_per_s", scan}}},
      {"grpc",
       {{"batch_entries", kBatchEntries},
        {"stream1_records_per_s", grpc1.records_per_s},
        {"stream1_mb_per_s", grpc1.mb_per_s},
        {"stream2_records_per_s", grpc2.records_per_s},
        {"stream2_mb_per_s", grpc2.mb_per_s}}},
      {"http", {{"single_requests_per_s", http}, {"httplib_single_requests_per_s", httplib}}}};
  std::printf("\n%-58s %12s\n", "ceiling", "per second");
  std::printf("%-58s %12.0f\n", "RocksDB WriteBatch, 100 records x 3 puts, 8 threads (rec)",
              storage_batch);
  std::printf("%-58s %12.0f\n", "RocksDB WriteBatch, 1 record x 3 puts, 32 threads (rec)",
              storage_single);
  std::printf("%-58s %12.0f\n", "RocksDB iterator over 1M flushed records (rows)", scan);
  std::printf("%-58s %12.0f\n", "gRPC stream, 1000-entry ChangeBatch, 1 stream (rec)",
              grpc1.records_per_s);
  std::printf("%-58s %12.0f\n", "gRPC stream, 2 streams at once, both together (rec)",
              grpc2.records_per_s);
  std::printf("%-58s %12.0f\n", "HTTP parse-and-answer, 32 keep-alive clients (req)", http);
  std::printf("%-58s %12.0f\n", "  the same on cpp-httplib 0.11, 64 threads (req)", httplib);
  cairn::bench::EmitJson(out, json_path);
  return 0;
}
