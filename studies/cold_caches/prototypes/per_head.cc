// The probe step one head at a time (product, mask, softmax and column sum over that head's 59
// rows: 476 KB of scores, which fit in L2) against all three heads at once: bit equality and
// microseconds, warm and with 64 MB written before each call.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>
const int64_t G=3, T=59, P=1957, D=64, N=P+T;
std::vector<char> junk(64<<20);
void Evict(){ for(size_t i=0;i<junk.size();i+=64) junk[i]=char(junk[i]+1); }
double Micros(const std::function<void()>& f, bool cold, int n=200){ double tot=0; for(int i=0;i<n;++i){ if(cold) Evict(); auto t0=std::chrono::steady_clock::now(); f(); tot+=std::chrono::duration<double,std::micro>(std::chrono::steady_clock::now()-t0).count(); } return tot/n; }
void Mask(float* s, int64_t rows) { for (int64_t r=0;r<rows;++r) std::fill(s+r*N+P+(r%T)+1, s+(r+1)*N, -INFINITY); }
at::Tensor Current(const at::Tensor& q, const at::Tensor& k){
  at::Tensor s=at::bmm(q.view({1,G*T,D}), k.view({1,N,D}).transpose(1,2)).view({1,G,T,N});
  Mask(s.data_ptr<float>(), G*T);
  at::_softmax_out(s,s,-1,false);
  return s.slice(3,0,P).sum(2).reshape({G,P});
}
at::Tensor PerHead(const at::Tensor& q, const at::Tensor& k){
  at::Tensor out=at::empty({G,P});
  at::Tensor s=at::empty({1,T,N});
  for(int64_t h=0;h<G;++h){
    at::bmm_out(s, q.view({1,G*T,D}).narrow(1,h*T,T), k.view({1,N,D}).transpose(1,2));
    Mask(s.data_ptr<float>(), T);
    at::_softmax_out(s,s,-1,false);
    at::Tensor o=out.narrow(0,h,1); at::sum_out(o, s.slice(2,0,P), {1});
  }
  return out;
}
int main(){
  at::manual_seed(1);
  at::Tensor q=at::randn({G*T,D})*0.125, k=at::randn({N,D})*3;
  for(int th:{1,2}){ at::set_num_threads(th);
    at::Tensor a=Current(q,k), b=PerHead(q,k);
    printf("threads %d bit-equal %d\n", th, (int)at::equal(a,b));
    for(bool cold:{false,true}) printf("threads %d %s: current %.0f per-head %.0f\n", th, cold?"evicted":"warm", Micros([&]{Current(q,k);},cold), Micros([&]{PerHead(q,k);},cold));
  }
}
