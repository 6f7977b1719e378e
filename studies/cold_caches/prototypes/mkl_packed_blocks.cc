// First prototype of a row-blocked probe step: the keys packed once with MKL's packed-matrix
// interface (the torch wheel exports cblas_sgemm_pack/compute), then per 16-row block of a head
// cblas_sgemm_compute, mask, at::_softmax_out and the block's rows added; against the current
// step, warm and with 32 MB written before each call. Prints bit equality and microseconds.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <functional>
extern "C" {
size_t cblas_sgemm_pack_get_size(int identifier, int m, int n, int k);
void cblas_sgemm_pack(int layout, int identifier, int trans, int m, int n, int k, float alpha, const float* src, int ld, float* dest);
void cblas_sgemm_compute(int layout, int transa, int transb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
}
using clk=std::chrono::steady_clock;
std::vector<float> junk(8<<20);
void Flush(){ for(size_t i=0;i<junk.size();i+=16) junk[i]+=1; }
double T(std::function<void()> f, bool cold, int n=200){ double s=0; for(int i=0;i<n;i++){ if(cold) Flush(); auto t=clk::now(); f(); s+=std::chrono::duration<double,std::micro>(clk::now()-t).count(); } return s/n; }
const int64_t G=3, TT=59, P=1957, D=64, N=P+TT;
void Mask(float* s, int64_t rows0, int64_t nrows) { // rows of block: global row index within head = r
  for (int64_t r=0;r<nrows;++r){ int64_t i=(rows0+r)%TT; std::fill(s+r*N+P+i+1, s+(r+1)*N, -INFINITY);} }
at::Tensor Current(const at::Tensor& q, const at::Tensor& k){
  at::Tensor s=at::bmm(q.view({1,G*TT,D}), k.view({1,N,D}).transpose(1,2)).view({1,G,TT,N});
  for(int64_t b=0;b<G;++b) Mask(s.data_ptr<float>()+b*TT*N, b*TT, TT);
  at::_softmax_out(s,s,-1,false);
  return s.slice(3,0,P).sum(2).reshape({G,P});
}
// ATen's cascade for T rows: groups of 16 sequential, folded
at::Tensor Blocked(const at::Tensor& q, const at::Tensor& k){
  size_t sz=cblas_sgemm_pack_get_size(162, G*TT, N, D);
  std::vector<float> packed(sz/4+16);
  cblas_sgemm_pack(101, 162, 112, G*TT, N, D, 1.0f, k.data_ptr<float>(), D, packed.data()); // B = K^T : k is [N,D] rowmajor -> trans
  at::Tensor out=at::zeros({G,P});
  const int64_t groups=(TT+15)/16;
  std::vector<float> gsum(G*groups*P);
  at::parallel_for(0, G*groups, 1, [&](int64_t b0, int64_t b1){
    at::Tensor buf=at::empty({16,N});
    for(int64_t b=b0;b<b1;++b){
      int64_t h=b/groups, gi=b%groups, r0=gi*16, nr=std::min<int64_t>(16,TT-r0);
      float* s=buf.data_ptr<float>();
      cblas_sgemm_compute(101, 111, 151, nr, N, D, q.data_ptr<float>()+(h*TT+r0)*D, D, packed.data(), N, 0.0f, s, N);
      Mask(s, r0, nr);
      at::Tensor v=buf.narrow(0,0,nr);
      at::_softmax_out(v,v,-1,false);
      float* gs=gsum.data()+b*P;
      std::memcpy(gs, s, P*4);
      for(int64_t r=1;r<nr;++r){ const float* x=s+r*N; for(int64_t j=0;j<P;++j) gs[j]+=x[j]; }
    }
  });
  // fold: full groups cascade into acc1 sequentially, remainder group last: rem + acc1
  float* o=out.data_ptr<float>();
  for(int64_t h=0;h<G;++h){
    int64_t full=TT/16; bool rem=TT%16;
    std::vector<float> acc1(P,0.f);
    for(int64_t gi=0;gi<full;++gi){ const float* gs=gsum.data()+(h*groups+gi)*P; for(int64_t j=0;j<P;++j) acc1[j]+=gs[j]; }
    for(int64_t j=0;j<P;++j) o[h*P+j]= rem ? gsum[(h*groups+full)*P+j]+acc1[j] : acc1[j];
  }
  return out;
}
int main(){
  for (int th : {1,2}) {
    at::set_num_threads(th);
    at::manual_seed(1);
    at::Tensor q=at::randn({G*TT,D})*0.125, k=at::randn({N,D})*3;
    at::Tensor a=Current(q,k), b=Blocked(q,k);
    printf("th %d equal %d maxdiff %g\n", th, (int)at::equal(a,b), (a-b).abs().max().item<float>());
    for (bool cold : {false,true}) printf("th %d cold %d current %.1f blocked %.1f\n", th, cold, T([&]{Current(q,k);},cold), T([&]{Blocked(q,k);},cold));
  }
}
