// The probe heads' product [G*T, D] x [D, N]: at::bmm (what importance.cc calls), at::mm, and the
// key columns split in parts over the threads (at::mm_out into column slices of one output): bits and µs.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>
const int64_t G=3, T=59, P=1957, D=64, N=P+T;
std::vector<char> junk(64<<20);
void Evict(){ for(size_t i=0;i<junk.size();i+=64) junk[i]=char(junk[i]+1); }
double Micros(const std::function<void()>& f, bool cold, int n=300){ std::vector<double> v; for(int i=0;i<n;++i){ if(cold) Evict(); auto t0=std::chrono::steady_clock::now(); f(); v.push_back(std::chrono::duration<double,std::micro>(std::chrono::steady_clock::now()-t0).count()); } std::sort(v.begin(),v.end()); return v[n/2]; }
at::Tensor Bmm(const at::Tensor& q, const at::Tensor& k){ return at::bmm(q.view({1,G*T,D}), k.view({1,N,D}).transpose(1,2)); }
at::Tensor Mm(const at::Tensor& q, const at::Tensor& k){ return at::mm(q, k.t()); }
// Row-major out [M, N] is column-major out^T [N, M] = K [N, D] (row-major = col-major D x N, transposed) times Q^T.
at::Tensor Split(const at::Tensor& q, const at::Tensor& k, int parts){
  at::Tensor out=at::empty({G*T,N});
  const int64_t step=(N+parts-1)/parts;
  at::parallel_for(0, parts, 1, [&](int64_t b, int64_t e){
    for(int64_t i=b;i<e;++i){ const int64_t c0=i*step, nc=std::min(N,c0+step)-c0;
      at::Tensor o=out.narrow(1,c0,nc); at::mm_out(o, q, k.narrow(0,c0,nc).t());
    }});
  return out;
}
int main(){
  at::manual_seed(1);
  at::Tensor q=at::randn({G*T,D})*0.125, k=at::randn({N,D})*3;
  for(int th:{1,2}){ at::set_num_threads(th);
    at::Tensor a=Bmm(q,k).view({G*T,N}), b=Mm(q,k), c=Split(q,k,2), d=Split(q,k,4);
    printf("threads %d bmm==mm %d bmm==split2 %d bmm==split4 %d\n", th, (int)at::equal(a,b), (int)at::equal(a,c), (int)at::equal(a,d));
    for(bool cold:{false,true}) printf("threads %d %s: bmm %.0f mm %.0f split2 %.0f split4 %.0f\n", th, cold?"evicted":"warm",
      Micros([&]{Bmm(q,k);},cold), Micros([&]{Mm(q,k);},cold), Micros([&]{Split(q,k,2);},cold), Micros([&]{Split(q,k,4);},cold));
  }
}
